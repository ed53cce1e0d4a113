package reconciler

import (
	"errors"
	"fmt"
	"sort"
	"strings"

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

// Change is the planned action for one object.
type Change struct {
	Object ObjectRef `json:"object"`
	Action Action    `json:"action"`
	// Reason explains recreates, skips and updates that change no field.
	Reason string `json:"reason,omitempty"`
	// Diff lists the fields that change (updates, recreates).
	Diff []FieldDiff `json:"diff,omitempty"`
	// Conflicts are fields another manager owns; the change is not applied without Force.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Source is the file the object was rendered from.
	Source string `json:"source,omitempty"`

	// Desired is the object to apply (nil for deletes); Live is the object in the cluster
	// (nil for creates); Predicted is the server's dry-run result of the apply.
	Desired   *unstructured.Unstructured `json:"-"`
	Live      *unstructured.Unstructured `json:"-"`
	Predicted *unstructured.Unstructured `json:"-"`

	resource   schema.GroupVersionResource
	namespaced bool
	stage      int
	// liveSeen: the live object was found up to date while listing and not kept (Live is
	// nil; it equals Desired in every field gpuctl sets).
	liveSeen bool
}

// Writes reports whether the change writes to the cluster.
func (c *Change) Writes() bool {
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

	inventory *inventory
	desiredN  int
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

// Count returns how many changes have the action.
func (p *Plan) Count(a Action) int {
	n := 0
	for _, c := range p.Changes {
		if c.Action == a {
			n++
		}
	}
	return n
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
// "3 to create, 1 to update, 1 to recreate, 2 to prune, 30 unchanged; GPUs: +8 in training-pool".
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
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.stage != b.stage {
			return a.stage < b.stage
		}
		if a.Object.Namespace != b.Object.Namespace {
			return a.Object.Namespace < b.Object.Namespace
		}
		if a.Object.Kind != b.Object.Kind {
			return a.Object.Kind < b.Object.Kind
		}
		return a.Object.Name < b.Object.Name
	})
}
