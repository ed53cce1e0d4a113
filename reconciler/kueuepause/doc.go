// Package kueuepause makes Kueue hold a paused job (job.suspend: true, docs/format.md §4.3).
//
// Kueue un-suspends a Job whose Workload it has admitted, whoever suspended it, and admits a
// suspended one when its quota frees up: spec.suspend alone does not pause a Job that Kueue
// queues. What does is Kueue's deactivation of the Job's Workload (spec.active: false): Kueue
// evicts it (reason InactiveWorkload), suspends the Job, gives its quota back and keeps it out
// of the queue until the Workload is active again. After each sync the engine calls Sync with
// the queue-managed Jobs it applied: the Workload of each Job annotated g8s.host/paused is
// deactivated and labelled g8s.host/paused; a Workload so labelled whose Job is no longer
// paused is activated again, and Kueue queues it anew. A Workload deactivated by someone else
// (no label) is left alone.
//
//	err := kueuepause.Sync(ctx, dyn, "gpuctl", jobs)
package kueuepause
