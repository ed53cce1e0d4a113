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
	// EndSync resumes detection. When applied is true the sync applied revision: desired is
	// the objects it applied (as planned) and plan the plan that applied them; detection then
	// compares the cluster with them. Otherwise the last applied revision stays the reference.
	EndSync(applied bool, revision string, desired []*unstructured.Unstructured, plan *reconciler.Plan)
	// Current returns the report and history held in memory, or false before the first
	// report.
	Current() (drift.Report, []drift.Entry, bool)
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
