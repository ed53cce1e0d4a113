package daemon

import (
	"context"
	"errors"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/reconciler"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Detector watches the cluster for drift against the last applied revision (drift/detector
// implements it). The daemon tells it when a sync starts and ends, so that gpuctl's own writes
// are never reported as drift.
type Detector interface {
	// Run watches until ctx ends; only the leader runs it.
	Run(ctx context.Context) error
	// BeginSync pauses detection while a sync writes.
	BeginSync()
	// EndSync resumes detection. With desired set, revision is now the reference: desired are
	// its objects (as Plan prepared them) and pending those that may still differ from them
	// (conflicts not applied, or a plan left unapplied); the others were just applied. With
	// desired nil the last applied revision stays the reference.
	EndSync(revision string, desired []*unstructured.Unstructured, pending []reconciler.ObjectRef)
	// Current returns the report and history held in memory, or false before the first
	// report.
	Current() (drift.Report, []drift.Entry, bool)
}

// pendingOf lists the objects of a plan that may differ from Git after it: all that the plan
// would write when it was not applied, else those whose changes had conflicts.
func pendingOf(plan *reconciler.Plan, applied bool) []reconciler.ObjectRef {
	var out []reconciler.ObjectRef
	for _, c := range plan.Changes {
		if len(c.Conflicts) > 0 || (!applied && c.Writes()) {
			out = append(out, c.Object)
		}
	}
	return out
}

// Drift returns the current drift report and history: from the detector on the leader, else
// from the drift ConfigMap.
func (d *Daemon) Drift(ctx context.Context) (drift.Report, []drift.Entry, error) {
	if d.opts.Drift != nil && d.running.Load() {
		if r, h, ok := d.opts.Drift.Current(); ok {
			return r, h, nil
		}
	}
	if d.opts.DriftStore == nil {
		return drift.Report{}, nil, errors.New("drift detection is not configured")
	}
	return d.opts.DriftStore.Read(ctx)
}
