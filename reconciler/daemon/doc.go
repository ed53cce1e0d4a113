// Package daemon is the loop of gpuctl-reconciler: on a source change, an interval, a webhook
// or a sync request it fetches a revision, renders it, plans and applies it with the engine of
// package reconciler, one sync at a time with exponential backoff on errors, and records the
// outcome in a status ConfigMap that `gpuctl status` and `gpuctl sync` read. A render error or a
// failed fetch never prunes: the last good revision stays applied.
//
// Write makes the API's writes of jobs (create, delete, pause, resume, scale) with package
// edit, held to the writer's namespaces: a commit pushed to a Git source (sources.Committer,
// with WriteOptions.Push), or the files of a directory source written while no sync reads them;
// then it triggers the sync that applies them.
package daemon
