package reconciler

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Action is what a sync does to one object.
type Action string

// The actions of a plan.
const (
	ActionCreate    Action = "create"
	ActionUpdate    Action = "update"
	ActionRecreate  Action = "recreate"
	ActionDelete    Action = "delete"
	ActionUnchanged Action = "unchanged"
	ActionSkipped   Action = "skipped"
)

// Conflict is a field that another field manager owns with another value.
type Conflict struct {
	Manager string `json:"manager"`
	Field   string `json:"field"`
}

// TakenBackText lists fields taken back from other managers, as the sync's results and the
// daemon's status print them: `.spec.replicas from "kubectl", ...`.
func TakenBackText(cs []Conflict) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s from %q", c.Field, c.Manager)
	}
	return strings.Join(parts, ", ")
}

// Change is the planned action for one object.
//
// A change that cannot be planned — a kind the cluster does not serve or the reconciler cannot
// read, a failed dry-run, a tenant object outside its namespace, a live object gpuctl did not
// create, or an object whose Namespace or tenant identity failed — is skipped (Action
// ActionSkipped) with Error set: it writes nothing, is never pruned (it is still desired), and
// the rest of the plan goes ahead. Plan.Failed lists such changes.
type Change struct {
	Object object.Ref `json:"object"`
	Action Action     `json:"action"`
	// Reason explains recreates, skips and updates that change no field.
	Reason string `json:"reason,omitempty"`
	// Error is why the object could not be planned (the action is then skipped).
	Error string `json:"error,omitempty"`
	// Diff lists the fields that change (updates, recreates).
	Diff []object.FieldDiff `json:"diff,omitempty"`
	// Conflicts are fields another manager owns; the change is not applied without Force.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// TakeBack are fields another manager owns that the apply takes back with force: the
	// revision changes this object (its applied-hash), and Git wins on the fields it declares.
	TakeBack []Conflict `json:"takeBack,omitempty"`
	// Source is the file the object was rendered from.
	Source string `json:"source,omitempty"`

	// Desired is the object to apply (nil for deletes); Live is the object in the cluster
	// (nil for creates; of a member that no desired object names, a prune, its kind and
	// metadata alone unless Options.WholePrunes); Predicted is the server's dry-run result of
	// the apply.
	Desired   *unstructured.Unstructured `json:"-"`
	Live      *unstructured.Unstructured `json:"-"`
	Predicted *unstructured.Unstructured `json:"-"`

	resource   schema.GroupVersionResource
	namespaced bool
	stage      int
	// tenant is the namespace of the tenant that declares the object (annotation
	// keys.Tenant): it is written as that tenant's ServiceAccount (see Options.ImpersonateTenants).
	tenant string
	// force: the apply may take fields from other managers (Options.Force, and the live
	// object is a member of this inventory).
	force bool
	// sealed: Desired was rendered from a SOPS-encrypted file without its key (keys.Encrypted):
	// it is left as it is in the cluster, with no request (leaveSealed).
	sealed bool
	// keep: the update records that the live object is kept as it is (keep.go), instead of
	// applying Desired.
	keep bool
	// liveSeen: the live object was found up to date while listing and not kept (Live is
	// nil; it equals Desired in every field gpuctl sets).
	liveSeen bool
	// limited: planned without the inventory (Plan.limited); a read these credentials may not
	// make leaves the change unchecked instead of failing it, and the change is not impersonated.
	limited bool
	// unchecked: skipped because these credentials may not read the object (see limited).
	unchecked bool
	// key is Object.Key(), and hash the desired object's applied-hash, gpus its GPUs and pool
	// its pool label, as prepare made it (a plan reads them of every object, more than once).
	key, hash, pool string
	gpus            int64
	// liveCounted: gpus and pool are Live's, counted while listing (a prune whose Live is its
	// metadata alone, see Options.WholePrunes).
	liveCounted bool
	// bodies hold Desired's body when a deferred render left it encoded (PlanDeferred).
	bodies *render.Bodies
}

// whole materializes the desired object of a deferred render (see PlanDeferred) and returns
// what drops its body again; for any other object, or one held whole already, both do nothing.
func (c *Change) whole() (release func()) { return c.bodies.Whole(c.Desired) }

// upToDateWith is m.upToDate of the change's desired and live objects; a deferred desired
// object stays whole unless it is up to date (a dry-run and the apply read it).
func (c *Change) upToDateWith(m *Manager) bool {
	release := c.whole()
	if !m.upToDate(c.Desired, c.Live) {
		return false
	}
	release()
	return true
}

// objectKey is Object.Key(), made once by prepare.
func (c *Change) objectKey() string {
	if c.key != "" {
		return c.key
	}
	return c.Object.Key()
}

// appliedHash is the desired object's applied-hash, made once by prepare.
func (c *Change) appliedHash() string {
	if c.hash != "" {
		return c.hash
	}
	return object.AnnotationOf(c.Desired, keys.AppliedHash)
}

// fail marks the change as one that cannot be planned: it is skipped with the error.
func (c *Change) fail(format string, args ...any) {
	c.Action, c.Error = ActionSkipped, fmt.Sprintf(format, args...)
	c.Conflicts, c.TakeBack, c.Diff, c.Predicted = nil, nil, nil, nil
}

// revisionChanges reports whether the desired object's applied-hash differs from the live
// one's: the revision changes what gpuctl applies to the object.
func (c *Change) revisionChanges() bool {
	return c.Live == nil || c.Desired == nil ||
		object.AnnotationOf(c.Live, keys.AppliedHash) != object.AnnotationOf(c.Desired, keys.AppliedHash)
}

// LeaveDrift is report mode's rule for a new revision: a change whose object the revision does
// not change (same applied-hash) and whose fields another manager owns is drift, and is left as
// it is — skipped with a reason, its conflicts kept, no error — instead of failing the sync.
// It returns how many changes it skipped.
func (p *Plan) LeaveDrift() int {
	n := 0
	for _, c := range p.Changes {
		if len(c.Conflicts) == 0 || c.Error != "" || c.Action == ActionSkipped || c.revisionChanges() {
			continue
		}
		c.Action, c.Reason = ActionSkipped, "drift left as it is (report mode): the revision does not change this object, and another manager owns fields it sets"
		n++
	}
	return n
}

// Writes reports whether the change writes to the cluster.
func (c *Change) Writes() bool {
	if c.Error != "" {
		return false
	}
	switch c.Action {
	case ActionCreate, ActionUpdate, ActionRecreate, ActionDelete:
		return len(c.Conflicts) == 0
	}
	return false
}

// Plan is everything a sync would do, computed without writing.
type Plan struct {
	Changes []*Change `json:"changes"`
	// GPUs are the GPUs requested per namespace and pool, before and after.
	GPUs []GPUDelta `json:"gpus,omitempty"`
	// Refused is set when a safety rule forbids applying the plan (see SafetyError).
	Refused *SafetyError `json:"refused,omitempty"`
	// Warnings are facts found while planning that do not stop the sync, e.g. a pool that
	// declares a GPU type the node labeler did not find on the node.
	Warnings []string `json:"warnings,omitempty"`
	// Scope is Options.Scope: the part of the repository whose removals the plan includes.
	Scope []string `json:"scope,omitempty"`
	// Held are the tenant namespaces whose files had errors (PlanRender): their live objects
	// are kept as they are.
	Held []string `json:"held,omitempty"`
	// Notes say what the plan does not cover: a scope, and what the credentials could not
	// read (the inventory and so prunes, nodes and so pool labels, objects left unchecked).
	Notes []string `json:"notes,omitempty"`

	// Stats say what planning cost (not part of the plan's JSON).
	Stats PlanStats `json:"-"`

	inventory *inventory
	desiredN  int
	// unlisted are the group-kinds the reconciler may not list: their members were not seen,
	// so the inventory keeps naming them.
	unlisted map[schema.GroupKind]bool
	// liveGPUs are the GPUs of the listed members kept as their metadata alone (members that
	// no desired object names, see Options.WholePrunes), by key.
	liveGPUs map[string]int64

	// multiKueueWorker: the render is a MultiKueue worker's (render.Result.MultiKueueWorker),
	// where a member with MultiKueue's labels is the manager's copy, not pruned.
	multiKueueWorker bool

	// limited: the inventory could not be read with these credentials (Options.LimitedCredentials);
	// the plan has no prunes, and Apply neither prunes nor records the inventory.
	limited bool
}

// PlanStats say what a plan cost.
type PlanStats struct {
	// Requests are the API requests the plan made.
	Requests int64
	// Listed are the members read by a LIST; Watched those decided from the watches
	// (SetWatched), of which only the changed ones were read, one GET each.
	Listed, Watched int
	// Took is the time the plan took.
	Took time.Duration
}

// SafetyError is why a plan is refused: an empty desired state, or more deletes than the
// prune budget allows.
type SafetyError struct {
	Reason string `json:"reason"`
	// Override names the option that allows it anyway.
	Override string `json:"override"`
}

func (e *SafetyError) Error() string {
	return fmt.Sprintf("refused: %s (use %s to allow it)", e.Reason, e.Override)
}

// ErrRefused is matched by errors.Is for every SafetyError.
var ErrRefused = errors.New("refused")

// Is makes errors.Is(err, ErrRefused) true.
func (e *SafetyError) Is(target error) bool { return target == ErrRefused }

// Count returns how many changes have the action and no error.
func (p *Plan) Count(a Action) int {
	n := 0
	for _, c := range p.Changes {
		if c.Action == a && c.Error == "" {
			n++
		}
	}
	return n
}

// Failed returns the changes that could not be planned (Error set).
func (p *Plan) Failed() []*Change {
	var out []*Change
	for _, c := range p.Changes {
		if c.Error != "" {
			out = append(out, c)
		}
	}
	return out
}

// Accepted returns the objects of desired (as given to Plan) whose changes did not fail: what
// a sync of the plan holds the cluster to. Drift detection watches only these.
func (p *Plan) Accepted(desired []*unstructured.Unstructured) []*unstructured.Unstructured {
	failed := map[*unstructured.Unstructured]bool{}
	for _, c := range p.Failed() {
		if c.Desired != nil {
			failed[c.Desired] = true
		}
	}
	if len(failed) == 0 {
		return desired
	}
	out := make([]*unstructured.Unstructured, 0, len(desired)-len(failed))
	for _, u := range desired {
		if !failed[u] {
			out = append(out, u)
		}
	}
	return out
}

// HasChanges reports whether applying the plan would write anything.
func (p *Plan) HasChanges() bool {
	for _, c := range p.Changes {
		switch c.Action {
		case ActionCreate, ActionUpdate, ActionRecreate, ActionDelete:
			return true
		}
	}
	return false
}

// Summary is the one-line account of a plan, e.g.
// "3 to create, 1 to update, 1 to recreate, 2 to prune, 30 unchanged, 1 failed; GPUs: +8 in training-pool".
func (p *Plan) Summary() string {
	parts := []string{}
	for _, x := range []struct {
		a    Action
		verb string
	}{{ActionCreate, "to create"}, {ActionUpdate, "to update"}, {ActionRecreate, "to recreate"},
		{ActionDelete, "to prune"}, {ActionUnchanged, "unchanged"}, {ActionSkipped, "skipped"}} {
		if n := p.Count(x.a); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, x.verb))
		}
	}
	if n := len(p.Failed()); n > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", n))
	}
	s := strings.Join(parts, ", ")
	switch {
	case !p.HasChanges() && s == "":
		s = "no changes"
	case !p.HasChanges():
		s = "no changes (" + s + ")"
	}
	if g := gpuSummary(p.GPUs); g != "" {
		s += "; GPUs: " + g
	}
	if n := conflicted(p); n > 0 {
		s += fmt.Sprintf("; %d with conflicts", n)
	}
	return s
}

func conflicted(p *Plan) int {
	n := 0
	for _, c := range p.Changes {
		if len(c.Conflicts) > 0 {
			n++
		}
	}
	return n
}

// sortChanges orders changes by stage, then namespace, kind and name.
func sortChanges(cs []*Change) {
	slices.SortStableFunc(cs, func(a, b *Change) int {
		return cmp.Or(cmp.Compare(a.stage, b.stage), strings.Compare(a.Object.Namespace, b.Object.Namespace),
			strings.Compare(a.Object.Kind, b.Object.Kind), strings.Compare(a.Object.Name, b.Object.Name))
	})
}
