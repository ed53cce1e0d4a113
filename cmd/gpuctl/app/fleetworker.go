package app

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/gpuctl/gpuctl/cluster"
)

// A job that Kueue's MultiKueue dispatches from a manager cluster runs in a worker cluster
// (cluster.QueueState.Cluster, the manager's MultiKueueCluster's name): the manager has no pod
// of it. logs and describe job read its pods in the worker through the config file's
// clusters: entry of that name; the fleet's views list the job once, as the manager's row,
// and leave out the worker's copy (cluster.QueueState.Origin) when they read its manager too.

// workerModel is the read model of the worker cluster that runs the job (the config file's
// clusters: entry named worker), for logs and describe job. A config file without that entry
// is exit 1, with the line that says what to add: "job alice.sft runs on cluster gpu-b
// (MultiKueue); add gpu-b to clusters: in ~/.config/gpuctl/config to read its logs" (what is
// "logs" or "pods"). Errors of the config file, or of the entry's own configuration, exit 2.
func workerModel(warn io.Writer, jobID, worker, what string) (cluster.Model, error) {
	path, cfg, err := readConfigFile(warn)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		if c.Name == worker {
			return c.model()
		}
	}
	return nil, &ExitError{Code: ExitFailed, Err: fmt.Errorf("job %s runs on cluster %s (MultiKueue); add %s to clusters: in %s to read its %s",
		jobID, worker, worker, path, what)}
}

// workerError is an error of the worker cluster's read of a job: as for a cluster of the
// fleet that cannot be read, its line names the cluster ("cluster gpu-b: unreachable: ...",
// "cluster gpu-b: unknown job alice.sft") and the exit code is 1; an error of the entry's own
// configuration (an *ExitError of the model) keeps its code.
func workerError(worker string, err error) error {
	if err == nil || errors.As(err, new(*ExitError)) {
		return err
	}
	return &ExitError{Code: ExitFailed, Err: errors.New(clusterProblem(worker, err))}
}

// checkCopy makes sure that the worker's job of the id (its queue state wq) is MultiKueue's
// copy of the manager's job, whose Workload is workload: a copy has the origin label, and its
// Workload has the name of the manager's (the prebuilt Workload that MultiKueue made there; ""
// from a daemon that does not say it). The worker's name comes from the manager's Workload
// (status.clusterName), and the config file's entry of that name may read another cluster
// (entries named otherwise than the manager's MultiKueueClusters, or a forged status): its
// job of the same id is then not this one, and its pods, logs and events are not shown as
// this job's. Otherwise exit 1, naming the cluster.
func checkCopy(worker, jobID, workload string, wq *cluster.QueueState) error {
	switch {
	case wq == nil || wq.Origin == "":
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("cluster %s: job %s there is not a MultiKueue copy: does the config file's entry %s read the cluster that the manager's MultiKueueCluster %s names?",
			worker, jobID, worker, worker)}
	case workload != "" && wq.Workload != workload:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("cluster %s: job %s there is the copy of another manager's job (Workload %s, not %s): does the config file's entry %s read the cluster that the manager's MultiKueueCluster %s names?",
			worker, jobID, orNone(wq.Workload), workload, worker, worker)}
	}
	return nil
}

// dispatchedTo are the worker clusters to which MultiKueue sent a job of this cluster: the one
// that runs it, else those nominated; none for a job MultiKueue did not dispatch.
func dispatchedTo(q *cluster.QueueState) []string {
	switch {
	case q == nil:
		return nil
	case q.Cluster != "":
		return []string{q.Cluster}
	}
	return q.Nominated
}

// dropWorkerCopies leaves out of the answers of a fleet's read the items of MultiKueue's copies
// of a job in a worker cluster whose manager the read also answered (an item that names that
// worker for the same job id, and whose Workload has the copy's Workload's name, as MultiKueue
// names it): the job is listed once, as its manager's. A job of the worker that is no copy of
// it (an entry that reads another cluster than the manager's of that name) stays. job gives an
// item's job id and queue state.
func dropWorkerCopies[T any](answers []clusterAnswer[T], job func(T) (string, *cluster.QueueState)) {
	sent := map[[3]string]bool{} // {worker, job id, Workload}
	for _, a := range answers {
		for _, it := range a.items {
			id, q := job(it)
			for _, w := range dispatchedTo(q) {
				sent[[3]string{w, id, q.Workload}] = true
			}
		}
	}
	for i, a := range answers {
		answers[i].items = slices.DeleteFunc(a.items, func(it T) bool {
			id, q := job(it)
			return q != nil && q.Origin != "" && sent[[3]string{a.cluster, id, q.Workload}]
		})
	}
}

// withWorker is the manager's description of a job that MultiKueue runs in a worker cluster,
// with what only the worker's description (wd) knows: the pods, the attempts and the last log
// lines, the reason told from them, and the worker's events (with the manager's, oldest first,
// the last cluster.DescribeEvents).
func withWorker(d, wd cluster.JobDescription) cluster.JobDescription {
	d.Pods, d.LastLog = wd.Pods, wd.LastLog
	d.Job.K8sResources.Pods, d.Job.Attempts = wd.Job.K8sResources.Pods, wd.Job.Attempts
	if wd.Job.Reason != "" {
		d.Job.Reason = wd.Job.Reason
	}
	events := append(slices.Clone(d.Events), wd.Events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].LastSeen.Before(events[j].LastSeen) })
	if n := len(events); n > cluster.DescribeEvents {
		events = events[n-cluster.DescribeEvents:]
	}
	d.Events = events
	return d
}
