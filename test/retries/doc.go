// Package retries holds the end-to-end tests of a training job's retries (docs/format.md §4.4)
// against the local cluster: gpuctl files synced with the CLI become Jobs whose pods the real
// scheduler preempts, the real taint manager evicts and kwok fails with an exit code, and the
// Job controller retries what was not the run's fault. The package has only tests; each runs
// on pool nodes of its own (main_test.go), one after the other, since each sync prunes what
// the one before it synced.
package retries
