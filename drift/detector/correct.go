package detector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/keys"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// errRetry asks the worker to evaluate the key again later, without a warning.
var errRetry = errors.New("retry later")

// The loop guard: an item corrected this many times within the window is left alone until the
// next sync — another writer keeps changing it back.
const (
	maxCorrections    = 5
	correctionsWindow = 5 * time.Minute
)

// found records a drifted item and, in correct mode, repairs it with fix. The repair's own
// watch event (and a re-evaluation of qkey shortly after) then resolves the item as corrected.
func (d *Detector) found(ctx context.Context, qkey string, it drift.Item, fix func(context.Context) error) error {
	if d.opts.Mode != drift.ModeCorrect || !it.Category.Correctable() {
		d.set(it)
		return nil
	}
	key := it.Key()
	it.Correction = correctionOf(it.Category)
	if n := d.attempt(key, false); n >= maxCorrections {
		it.Correction = "stopped"
		it.Error = fmt.Sprintf("corrected %d times in %s and changed back each time (last by %s); not corrected again until the next sync",
			n, correctionsWindow, orUnknown(it.Manager))
		d.set(it)
		return nil
	}
	d.set(it)
	undo := d.awaitResolution(key, drift.Corrected)
	err := fix(ctx)
	if err != nil {
		undo()
		if !errors.Is(err, errRetry) {
			it.Error = err.Error()
			d.set(it)
		}
		return err
	}
	d.attempt(key, true)
	d.queue.AddAfter(qkey, 500*time.Millisecond)
	return nil
}

// awaitResolution records how the item's resolution is to be recorded (Corrected, ShadowDeleted)
// when the repair's watch event comes. It is recorded before the repair is sent: another
// worker's evaluation may see the repaired object before the repair returns. undo, for a repair
// that failed, forgets it unless an earlier repair of the item awaits its resolution too (a
// second attempt from a cache that had not seen the first yet must not forget the first).
func (d *Detector) awaitResolution(key string, how drift.Transition) (undo func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, earlier := d.correcting[key]
	d.correcting[key] = how
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !earlier {
			delete(d.correcting, key)
		}
	}
}

// attempt counts the recent corrections of an item, recording one more with add.
func (d *Detector) attempt(key string, add bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	recent := d.attempts[key][:0]
	for _, t := range d.attempts[key] {
		if now.Sub(t) < correctionsWindow {
			recent = append(recent, t)
		}
	}
	if add {
		recent = append(recent, now)
	}
	d.attempts[key] = recent
	return len(recent)
}

func correctionOf(c drift.Category) string {
	switch c {
	case drift.Deleted:
		return "recreate"
	case drift.NodeLabel:
		return "re-label"
	}
	return "re-apply"
}

// removePoolLabel removes a pool label that was set by hand on a node no pool names.
func (d *Detector) removePoolLabel(ctx context.Context, node string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, keys.Pool)
	_, err := d.opts.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: d.opts.Engine.Options().FieldManager})
	if err != nil {
		return fmt.Errorf("Node %s: remove label %s: %w", node, keys.Pool, err)
	}
	return nil
}

// deleteShadow deletes a shadow workload (--drift-delete-shadow), its pods with it.
func (d *Detector) deleteShadow(ctx context.Context, kind string, m metav1.Object, it drift.Item) error {
	key := it.Key()
	if n := d.attempt(key, false); n >= maxCorrections {
		return nil
	}
	policy := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: metav1.NewUIDPreconditions(string(m.GetUID()))}
	undo := d.awaitResolution(key, drift.ShadowDeleted)
	err := d.dyn.Resource(workloadResources[kind]).Namespace(m.GetNamespace()).Delete(ctx, m.GetName(), opts)
	if apierrors.IsNotFound(err) {
		return nil // deleted already (an earlier attempt): its watch event resolves the item
	}
	if err != nil {
		undo()
		it.Error = fmt.Sprintf("%s: delete: %v", it.Object, err)
		d.set(it)
		return err
	}
	d.attempt(key, true)
	return nil
}
