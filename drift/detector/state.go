package detector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	corev1 "k8s.io/api/core/v1"
)

// set records an item: new ones and changed ones go to the history and become an Event.
func (d *Detector) set(it drift.Item) {
	now := time.Now().UTC()
	key := it.Key()
	d.mu.Lock()
	old, had := d.items[key]
	change := drift.Transition("")
	switch {
	case !had:
		it.Detected, change = now, drift.Detected
	case !sameDrift(old, it):
		it.Detected, change = old.Detected, drift.Changed
	default:
		it.Detected = old.Detected
	}
	if it.Changed == nil && !had {
		it.Changed = &it.Detected
	}
	if !reflect.DeepEqual(old, it) {
		d.items[key] = it
		d.dirty = true
	}
	if change != "" {
		d.history.Add(drift.Entry{Time: now, Change: change, Item: it})
	}
	d.evalAt = now
	d.mu.Unlock()
	if change != "" {
		d.opts.Log.Info("drift "+string(change), "category", it.Category, "object", it.Object.String(), "manager", it.Manager, "message", it.Message)
		d.event(it, corev1.EventTypeWarning, eventReason[it.Category], it.Message+fieldsNote(it))
		d.alert(it)
	}
}

// resolve removes an item. how is Corrected or ShadowDeleted when gpuctl did it, else the
// change is Resolved, unless a correction of the item is pending; why is the reason a
// Resolved entry records.
func (d *Detector) resolve(key string, how drift.Transition, why string) {
	now := time.Now().UTC()
	d.mu.Lock()
	it, had := d.items[key]
	if pending, ok := d.correcting[key]; ok {
		delete(d.correcting, key)
		if how == "" {
			how = pending
		}
	}
	if !had {
		d.mu.Unlock()
		return
	}
	if how == "" {
		how = drift.Resolved
	}
	if how != drift.Resolved {
		why = ""
	}
	delete(d.items, key)
	d.dirty = true
	d.evalAt = now
	d.history.Add(drift.Entry{Time: now, Change: how, Item: it, Reason: why})
	d.mu.Unlock()
	d.opts.Log.Info("drift "+string(how), "category", it.Category, "object", it.Object.String(), "reason", why)
	d.alertResolved(it, how)
	switch how {
	case drift.Corrected:
		d.event(it, corev1.EventTypeNormal, "DriftCorrected", "gpuctl re-applied what Git declares: "+it.Message)
	case drift.ShadowDeleted:
		d.event(it, corev1.EventTypeNormal, "ShadowWorkloadDeleted", "gpuctl deleted this workload, which is not in Git (--drift-delete-shadow)")
	}
}

// TookBack records that a sync took fields back from other managers (its revision changed the
// objects: Git wins). Each item goes to the history as drift.TakenBack, and a reported item of
// the same object leaves the report: the sync resolved it.
func (d *Detector) TookBack(items []drift.Item) {
	now := time.Now().UTC()
	var resolved []drift.Item // reported items that leave the report
	d.mu.Lock()
	for i, it := range items {
		key := it.Key()
		if old, had := d.items[key]; had {
			delete(d.items, key)
			it.Detected, it.Changed = old.Detected, old.Changed
			resolved = append(resolved, old)
		}
		delete(d.correcting, key)
		d.history.Add(drift.Entry{Time: now, Change: drift.TakenBack, Item: it})
		items[i] = it
	}
	d.dirty = len(items) > 0 || d.dirty
	d.mu.Unlock()
	for _, it := range items {
		d.opts.Log.Info("drift "+string(drift.TakenBack), "object", it.Object.String(), "message", it.Message)
		d.event(it, corev1.EventTypeNormal, "DriftTakenBack", "gpuctl applied a revision that changes this object: "+it.Message)
	}
	for _, it := range resolved {
		d.alertResolved(it, drift.TakenBack)
	}
}

// sameDrift tells whether two items describe the same difference (not counting when it was
// seen or what correction did).
func sameDrift(a, b drift.Item) bool {
	a.Detected, b.Detected = time.Time{}, time.Time{}
	a.Correction, b.Correction, a.Error, b.Error = "", "", "", ""
	a.Changed, b.Changed = nil, nil
	return reflect.DeepEqual(a, b)
}

// reportedKeys calls fn for a copy of every reported item.
func (d *Detector) reportedKeys(fn func(drift.Item)) {
	d.mu.Lock()
	items := make([]drift.Item, 0, len(d.items))
	for _, it := range d.items {
		items = append(items, it)
	}
	d.mu.Unlock()
	for _, it := range items {
		fn(it)
	}
}

var eventReason = map[drift.Category]string{
	drift.Modified: "DriftModified", drift.Deleted: "DriftDeleted", drift.NodeLabel: "DriftNodeLabel",
	drift.NodeMissing: "PoolNodeMissing", drift.GPUType: "PoolGPUTypeMismatch", drift.Shadow: "ShadowWorkload",
}

// event records a Kubernetes Event on the item's object.
func (d *Detector) event(it drift.Item, typ, reason, msg string) {
	if d.opts.Events == nil {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: it.Object.APIVersion, Kind: it.Object.Kind, Namespace: it.Object.Namespace, Name: it.Object.Name}
	d.opts.Events.Event(ref, typ, reason, msg)
}

func fieldsNote(it drift.Item) string {
	if len(it.Fields) == 0 {
		return ""
	}
	var parts []string
	for i, f := range it.Fields {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(it.Fields)-5))
			break
		}
		parts = append(parts, f.String())
	}
	return "; " + strings.Join(parts, "; ")
}

// load reads the stored report and history, so that a new leader keeps the history and the
// times items were first detected.
func (d *Detector) load(ctx context.Context) {
	if d.opts.Store == nil {
		return
	}
	r, hist, err := d.opts.Store.Read(ctx)
	if err != nil {
		if !errors.Is(err, drift.ErrNoReport) {
			d.opts.Log.Warn("drift: read the stored report", "err", err)
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range hist {
		d.history.Add(e)
	}
	for _, it := range r.Items {
		d.items[it.Key()] = it
	}
}

// flushLoop writes the report when it changed, at most four times a second; after a write
// that failed (the API server unreachable), not before flushBackoff.
func (d *Detector) flushLoop(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.mu.Lock()
			wait := time.Now().Before(d.flushAfter)
			d.mu.Unlock()
			if !wait {
				d.flush(ctx)
			}
		}
	}
}

// flushBackoff is how long the detector waits after the n-th write of the report in a row
// that failed: 1 s, doubling up to 30 s. An outage of the API server costs a write and a log
// line every 30 s, not four a second.
func flushBackoff(n int) time.Duration {
	return min(time.Second<<min(n-1, 5), 30*time.Second)
}

func (d *Detector) flush(ctx context.Context) {
	d.mu.Lock()
	if !d.dirty || d.desired == nil {
		d.mu.Unlock()
		return
	}
	d.dirty = false
	r := d.reportLocked()
	hist := append([]drift.Entry(nil), d.history.Entries...)
	d.mu.Unlock()
	if m := d.opts.Metrics; m != nil {
		m.Reset()
		for _, it := range r.Items {
			m.WithLabelValues(it.Object.Kind, string(it.Category)).Inc()
		}
	}
	if d.opts.Store == nil {
		return
	}
	err := d.opts.Store.Write(ctx, r, hist)
	d.mu.Lock()
	failed := d.flushFailed
	if err != nil {
		d.dirty = true
		d.flushFailed++
		d.flushAfter = time.Now().Add(flushBackoff(d.flushFailed))
	} else {
		d.flushFailed, d.flushAfter = 0, time.Time{}
	}
	next := time.Until(d.flushAfter)
	d.mu.Unlock()
	switch {
	case err != nil:
		d.opts.Log.Warn("drift: store the report", "err", err, "failed writes", failed+1, "next in", next.Round(time.Second))
	case failed > 0:
		d.opts.Log.Info("drift: the report is stored again", "failed writes", failed)
	}
}
