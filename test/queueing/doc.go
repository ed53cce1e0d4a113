// Package queueing holds the end-to-end tests of queueing: kueue against the local cluster with
// the real Kueue controller (testcluster.Options.Kueue): gpuctl files synced with the CLI become
// Kueue's queues, and Kueue orders, lends and gang-admits the jobs. The package has only
// tests; its testdata/repo is the repository they sync.
package queueing
