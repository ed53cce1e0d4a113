package cluster

import (
	"context"
	"fmt"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// DescribeEvents bounds the events of a JobDescription: the last ones.
const DescribeEvents = 20

// JobDescription is what `gpuctl describe job` shows: the job, its pods, its last events, the
// revision that declared it and its drift.
type JobDescription struct {
	// Job is the job as Job answers it.
	Job JobDetail `json:"job"`
	// Pods are the job's rows as JobPods answers them (one row without a pod when it has none).
	Pods []JobPod `json:"pods"`
	// Events are the last DescribeEvents events of the job's objects and pods, oldest first.
	Events []Event `json:"events"`
	// Revision is the revision that gpuctl-reconciler last applied (its status ConfigMap in
	// the system namespace), which declared the job; "" when there is none or it cannot be read.
	Revision string `json:"revision"`
	// LastLog are the last lines (LastLogLines) of the log of the container that failed the
	// job's last failed attempt, while its pod exists; empty otherwise.
	LastLog []LogLine `json:"lastLog,omitempty"`
	// Drift are the items of the drift report about the job's objects (the workload and
	// the objects of its file, such as its Service); empty when none drifted or there is no
	// report to read.
	Drift []drift.Item `json:"drift"`
}

// JobDescription describes one job (id as Job takes it). The daemon's status and the drift
// report are read when the credentials allow (ConfigMaps in the system namespace) and left
// out otherwise. An unknown job is a *NotFoundError; a bare name of several jobs an
// *AmbiguousError.
func (r *Reader) JobDescription(ctx context.Context, id string) (JobDescription, error) {
	wl, err := r.findWorkload(ctx, id)
	if err != nil {
		return JobDescription{}, err
	}
	pods, err := r.queuedJobPods(ctx, &wl)
	if err != nil {
		return JobDescription{}, err
	}
	raw, err := r.ObjectSource().Events(ctx, wl.meta.Namespace)
	if err != nil {
		return JobDescription{}, fmt.Errorf("list events: %w", err)
	}
	events, err := r.eventsIn(ctx, wl.meta.Namespace, []workload{wl}, raw)
	if err != nil {
		return JobDescription{}, err
	}
	if n := len(events.Items); n > DescribeEvents {
		events.Items = events.Items[n-DescribeEvents:]
	}
	d := JobDescription{Job: detailWithPods(wl, pods), Pods: wl.rows(pods), Events: events.Items,
		Drift: []drift.Item{}}
	if err := r.explain(ctx, &d.Job, wl, pods, raw); err != nil {
		return JobDescription{}, err
	}
	d.LastLog = r.lastLog(ctx, d.Job.Attempts, pods)
	if st, _, err := daemon.NewStore(r.Client, r.namespace()).Read(ctx); err == nil {
		d.Revision = st.AppliedRevision
	}
	if report, _, err := drift.NewStore(r.Client, r.namespace()).Read(ctx); err == nil {
		d.Drift = driftOf(wl, report.Items)
	}
	return d, nil
}

// driftOf keeps the drift items of the workload: its own object, and the objects declared in
// its file.
func driftOf(w workload, items []drift.Item) []drift.Item {
	src := w.meta.Annotations[keys.Source]
	out := []drift.Item{}
	for _, it := range items {
		own := it.Object.Namespace == w.meta.Namespace && it.Object.Name == w.meta.Name && it.Object.Kind == w.object
		if own || src != "" && it.Source == src {
			out = append(out, it)
		}
	}
	return out
}
