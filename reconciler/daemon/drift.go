package daemon

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
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
	// its objects (as Plan prepared them; bodies hold those a deferred render left as heads)
	// and pending those that may still differ from them (conflicts not applied, or a plan
	// left unapplied); the others were just applied. With desired nil the last applied
	// revision stays the reference. held are the tenant namespaces whose files had errors:
	// their objects, kept as a revision before left them, are neither drift nor shadows.
	// multiKueueWorker (render.Result.MultiKueueWorker): MultiKueue's copies of the manager's
	// jobs are no shadows; elsewhere their labels are not believed.
	EndSync(revision string, desired []*unstructured.Unstructured, bodies *render.Bodies, pending []object.Ref, held []string, multiKueueWorker bool)
	// Current returns the report and history held in memory, or false before the first
	// report.
	Current() (drift.Report, []drift.Entry, bool)
	// TookBack records in the history (drift.TakenBack) the objects whose fields a sync took
	// back from other managers; they leave the report. Called between BeginSync and EndSync.
	TookBack(items []drift.Item)
}

// takenBack returns the objects of an applied plan whose fields were taken back from other
// managers (the revision changed them: Git wins), as drift items of category modified.
func takenBack(plan *reconciler.Plan, cs *reconciler.ChangeSet, revision string) []drift.Item {
	if cs == nil {
		return nil
	}
	var out []drift.Item
	for i, r := range cs.Results {
		if len(r.TakenBack) == 0 || i >= len(plan.Changes) {
			continue
		}
		c := plan.Changes[i]
		diffs := map[string]object.FieldDiff{}
		for _, d := range c.Diff {
			diffs["."+d.Path] = d
		}
		it := drift.Item{Object: r.Object, Category: drift.Modified, Source: c.Source, Manager: r.TakenBack[0].Manager, Detected: time.Now().UTC(),
			Message: "took back " + reconciler.TakenBackText(r.TakenBack) + " (revision " + humanize.Revision(revision) + " changes this object)"}
		for _, tb := range r.TakenBack {
			d := diffs[tb.Field]
			it.Fields = append(it.Fields, drift.Field{Path: strings.TrimPrefix(tb.Field, "."), Manager: tb.Manager, Live: d.Old, Desired: d.New})
		}
		out = append(out, it)
	}
	return out
}

// recordTakenBack puts taken-back objects in the drift history: through the detector, which
// owns the history, or else straight into the drift store when there is one.
func (d *Daemon) recordTakenBack(ctx context.Context, items []drift.Item) {
	switch {
	case len(items) == 0:
	case d.opts.Drift != nil:
		d.opts.Drift.TookBack(items)
	case d.opts.DriftStore != nil:
		entries := make([]drift.Entry, len(items))
		for i, it := range items {
			entries[i] = drift.Entry{Time: it.Detected, Change: drift.TakenBack, Item: it}
		}
		if err := d.opts.DriftStore.AddHistory(ctx, entries, 0); err != nil {
			d.opts.Log.Warn("drift: record what a sync took back", "err", err)
		}
	}
}

// pendingOf lists the objects of a plan that may differ from Git after it: all that the plan
// would write when it was not applied, else those whose changes had conflicts.
func pendingOf(plan *reconciler.Plan, applied bool) []object.Ref {
	var out []object.Ref
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
