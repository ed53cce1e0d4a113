// Package daemon is the loop of gpuctl-reconciler: on a source change, an interval, a webhook
// or a sync request it fetches a revision, renders it, plans and applies it with the engine of
// package reconciler, one sync at a time with exponential backoff on errors, and records the
// outcome in a status ConfigMap that `gpuctl status` and `gpuctl sync` read. A render error or a
// failed fetch never prunes: the last good revision stays applied.
package daemon
