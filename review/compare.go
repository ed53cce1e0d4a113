package review

import (
	"encoding/json"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Action is what a change does to an object.
type Action string

// Actions of a Change.
const (
	ActionAdded   Action = "added"
	ActionChanged Action = "changed"
	ActionRemoved Action = "removed"
)

// Change is one object that differs between the two revisions.
type Change struct {
	Action     Action `json:"action"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Source is the repository-relative file the object comes from (the head's, or the base's
	// for a removed object).
	Source string `json:"source,omitempty"`
	// GPUsBefore and GPUsAfter are the GPUs the object requests (pods × GPUs per pod).
	GPUsBefore int64 `json:"gpusBefore"`
	GPUsAfter  int64 `json:"gpusAfter"`
	// Fields are the changed leaf fields of a changed object.
	Fields []FieldDiff `json:"fields,omitempty"`

	// Before and After are the objects (nil when added or removed).
	Before *unstructured.Unstructured `json:"-"`
	After  *unstructured.Unstructured `json:"-"`
}

// ID returns "Kind namespace/name".
func (c *Change) ID() string {
	if c.Namespace == "" {
		return c.Kind + " " + c.Name
	}
	return c.Kind + " " + c.Namespace + "/" + c.Name
}

// FieldDiff is one changed field: Old is the base value (nil: added), New the head value
// (nil: removed).
type FieldDiff = reconciler.FieldDiff

// objectKey pairs objects of the two revisions: apiVersion, kind, namespace and name.
func objectKey(u *unstructured.Unstructured) string {
	return u.GetAPIVersion() + " " + render.ObjectID(u)
}

// Compare pairs the objects of two revisions and returns those added, changed or removed,
// in apply order (as render sorts objects), removed objects last.
func Compare(base, head []*unstructured.Unstructured) []*Change {
	before := make(map[string]*unstructured.Unstructured, len(base))
	for _, u := range base {
		before[objectKey(u)] = u
	}
	seen := make(map[string]bool, len(head))
	var out []*Change
	for _, u := range head {
		k := objectKey(u)
		seen[k] = true
		b, ok := before[k]
		switch {
		case !ok:
			out = append(out, newChange(ActionAdded, nil, u))
		default:
			if fields := DiffFields(b.Object, u.Object); len(fields) > 0 {
				c := newChange(ActionChanged, b, u)
				c.Fields = fields
				out = append(out, c)
			}
		}
	}
	for _, u := range base {
		if !seen[objectKey(u)] {
			out = append(out, newChange(ActionRemoved, u, nil))
		}
	}
	return out
}

func newChange(a Action, before, after *unstructured.Unstructured) *Change {
	u := after
	if u == nil {
		u = before
	}
	return &Change{Action: a, APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(),
		Name: u.GetName(), Source: u.GetAnnotations()[keys.Source], Before: before, After: after,
		GPUsBefore: reconciler.GPUsRequested(before), GPUsAfter: reconciler.GPUsRequested(after)}
}

// DiffFields lists the leaf fields that differ between two objects, in path order. A map or
// list present on one side only is one field.
func DiffFields(a, b map[string]any) []FieldDiff { return reconciler.DiffFields(a, b) }

// valueText formats a field value on one line: scalars as they are, maps and lists as JSON.
func valueText(v any) string {
	switch t := v.(type) {
	case nil:
		return "<none>"
	case string:
		return t
	case map[string]any, []any:
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Sprint(t)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}
