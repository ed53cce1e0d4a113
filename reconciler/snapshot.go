package reconciler

import (
	"context"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A Snapshot is a plan in which nothing was left to do, reduced to what tells that it still
// holds: each desired object's reference and applied-hash, and the pool labels' node intents.
// A daemon that fetches the same revision again asks Unchanged instead of rendering and
// planning it: the physical limit of a no-op (read the files, compare, send nothing).
type Snapshot struct {
	refs   []object.Ref
	hashes map[string]string // by object.Ref.Key
	gks    map[schema.GroupKind]int
	nodes  []*unstructured.Unstructured
}

// Len is the number of objects of the snapshot, node intents included.
func (s *Snapshot) Len() int { return len(s.refs) + len(s.nodes) }

// SnapshotOf returns the snapshot of desired (the objects plan was made of, as it prepared
// them) when plan leaves nothing to do: every object unchanged, nothing failed, skipped,
// pruned or warned about; else nil.
func SnapshotOf(plan *Plan, desired []*unstructured.Unstructured) *Snapshot {
	if plan == nil || plan.Refused != nil || len(plan.Warnings) > 0 || len(plan.Notes) > 0 || plan.limited || len(plan.unlisted) > 0 {
		return nil
	}
	for _, c := range plan.Changes {
		if c.Action != ActionUnchanged || c.Error != "" || len(c.Conflicts) > 0 {
			return nil
		}
	}
	s := &Snapshot{hashes: make(map[string]string, len(desired)), gks: map[schema.GroupKind]int{}}
	for _, u := range desired {
		if object.IsNode(u) {
			s.nodes = append(s.nodes, u.DeepCopy())
			continue
		}
		if QueueManaged(u) {
			return nil // Apply also keeps paused Jobs out of Kueue's queue (kueuepause): not skipped
		}
		ref := object.RefOf(u)
		h := object.AnnotationOf(u, keys.AppliedHash)
		if h == "" {
			return nil
		}
		s.refs = append(s.refs, ref)
		s.hashes[ref.Key()] = h
		s.gks[ref.GroupKind()]++
	}
	return s
}

// Unchanged returns the plan of s in which every object is unchanged, decided from the watches
// alone (SetWatched) without a request, or false when they cannot tell: a kind or the inventory
// not watched, the inventory changed, a member changed since it was found up to date, missing,
// or not in s (to prune), a node's pool labels to change.
func (m *Manager) Unchanged(ctx context.Context, s *Snapshot) (*Plan, bool) {
	w := m.watchedView()
	if w == nil || s == nil {
		return nil, false
	}
	requests, began := m.requests.Load(), time.Now()
	plan, ok := m.unchanged(ctx, w, s)
	if !ok || m.requests.Load() != requests {
		return nil, false
	}
	plan.Stats.Took = time.Since(began)
	return plan, true
}

func (m *Manager) unchanged(ctx context.Context, w Watched, s *Snapshot) (*Plan, bool) {
	inv := newInventory(m.opts.InventoryName, m.opts.Namespace)
	u, _ := m.watchedInventory(inv)
	if u == nil || inv.checkParent(u) != nil {
		return nil, false
	}
	for gk := range parseGroupKinds(u.GetAnnotations()[keys.ApplySetGroupKinds]) {
		if s.gks[gk] == 0 {
			return nil, false // members of a kind s does not have may be left to prune
		}
	}
	watched := 0
	for gk, n := range s.gks {
		members, ok := w.Members(inv.id, gk)
		if !ok || len(members) != n {
			return nil, false
		}
		for _, mb := range members {
			key := object.KeyOf(gk, mb.Namespace, mb.Name)
			h, desired := s.hashes[key]
			if !desired || !m.verified.unchanged(gk, key, mb, h) {
				return nil, false
			}
		}
		watched += n
	}
	intents := make([]*unstructured.Unstructured, len(s.nodes))
	for i, n := range s.nodes {
		intents[i] = n.DeepCopy() // planNodes may drop labels the node labeler publishes
	}
	var warnings []string
	nodeChanges, err := m.planNodes(ctx, intents, nil, &warnings) // from the watch; a LIST fails Unchanged (requests)
	if err != nil || len(warnings) > 0 {
		return nil, false
	}
	plan := &Plan{Changes: make([]*Change, 0, len(s.refs)+len(nodeChanges))}
	for _, ref := range s.refs {
		plan.Changes = append(plan.Changes, &Change{Object: ref, Action: ActionUnchanged})
	}
	for _, c := range nodeChanges {
		if c.Action != ActionUnchanged {
			return nil, false
		}
		plan.Changes = append(plan.Changes, c)
	}
	plan.Stats.Watched = watched
	return plan, true
}
