// Package queuestate tests the read model's queue state (cluster.QueueState) against the real
// Kueue of the local cluster (testcluster.Options.Kueue): jobs that Kueue queues, admits and
// preempts, as gpuctl get jobs, describe job, the daemon's informers and its web page show them.
package queuestate
