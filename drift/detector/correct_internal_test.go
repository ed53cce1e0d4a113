package detector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/notify"
	"k8s.io/client-go/util/workqueue"
)

// TestCorrectionSeenBeforeItReturns: the repair's watch event may be evaluated by another
// worker (the resync's full evaluation) before the repair's request returns. That resolution
// is still a correction, not "resolved by hand"; and a failed repair leaves nothing pending, so
// a later resolution by hand is Resolved. (CI once saw the plain Job of
// TestKueueAdmissionIsNotDrift resolved, never corrected: the pending correction was recorded
// after the request.)
func TestCorrectionSeenBeforeItReturns(t *testing.T) {
	d := &Detector{opts: Options{Mode: drift.ModeCorrect, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Alerts: notify.Discard},
		items: map[string]drift.Item{}, attempts: map[string][]time.Time{}, correcting: map[string]drift.Transition{},
		history: drift.History{Max: 10},
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	defer d.queue.ShutDown()
	job := func(name string) drift.Item {
		return drift.Item{Category: drift.Modified, Object: object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "ns", Name: name},
			Manager: "kubectl-edit", Message: "spec.suspend changed"}
	}
	last := func() drift.Entry {
		hist := d.history.Entries
		if len(hist) == 0 {
			t.Fatal("empty history")
		}
		return hist[len(hist)-1]
	}

	fast := job("fast")
	err := d.found(t.Context(), "o:fast", fast, func(context.Context) error {
		d.resolve(fast.Key(), "", "") // another worker saw the repaired object first
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if e := last(); e.Change != drift.Corrected || e.Item.Object.Name != "fast" {
		t.Fatalf("the repair seen before it returned is recorded as %s of %s; want corrected", e.Change, e.Item.Object.Name)
	}
	if n := d.attempt(fast.Key(), false); n != 1 {
		t.Errorf("%d corrections counted; want 1", n)
	}

	// A second repair, from a cache that had not seen the first, fails (the object changed
	// under it): the first still awaits its resolution, which is a correction. (CI once saw a
	// shadow that --drift-delete-shadow deleted recorded as resolved: a second delete's
	// failure forgot the first.)
	twice := job("twice")
	if err := d.found(t.Context(), "o:twice", twice, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := d.found(t.Context(), "o:twice", twice, func(context.Context) error { return errors.New("conflict") }); err == nil {
		t.Fatal("the failed second repair returned no error")
	}
	d.resolve(twice.Key(), "", "")
	if e := last(); e.Change != drift.Corrected || e.Item.Object.Name != "twice" {
		t.Fatalf("a repair whose second attempt failed is recorded as %s of %s; want corrected", e.Change, e.Item.Object.Name)
	}

	failed := job("failed")
	err = d.found(t.Context(), "o:failed", failed, func(context.Context) error { return errors.New("forbidden") })
	if err == nil {
		t.Fatal("a failed repair returned no error")
	}
	d.resolve(failed.Key(), "", "")
	if e := last(); e.Change != drift.Resolved {
		t.Fatalf("after a failed repair, a change by hand is recorded as %s; want resolved", e.Change)
	}
	if n := d.attempt(failed.Key(), false); n != 0 {
		t.Errorf("a failed repair counted as %d corrections; want 0", n)
	}
}
