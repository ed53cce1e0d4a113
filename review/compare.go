package review

import (
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DiffAction is what the head revision does to an object of the base: adds, changes or
// removes it.
type DiffAction string

// The actions of an ObjectDiff.
const (
	DiffAdded   DiffAction = "added"
	DiffChanged DiffAction = "changed"
	DiffRemoved DiffAction = "removed"
)

// ObjectDiff is one object that differs between the two revisions.
type ObjectDiff struct {
	Action DiffAction `json:"action"`
	// Ref names the object; its fields are the diff's own in JSON (apiVersion, kind,
	// namespace, name).
	object.Ref
	// Source is the repository-relative file the object comes from (the head's, or the base's
	// for a removed object).
	Source string `json:"source,omitempty"`
	// GPUsBefore and GPUsAfter are the GPUs the object requests (object.GPUs: pods × GPUs
	// per pod).
	GPUsBefore int64 `json:"gpusBefore"`
	GPUsAfter  int64 `json:"gpusAfter"`
	// Fields are the changed leaf fields of a changed object: Old is the base value (nil:
	// added), New the head value (nil: removed).
	Fields []object.FieldDiff `json:"fields,omitempty"`

	// Before and After are the objects (nil when added or removed).
	Before *unstructured.Unstructured `json:"-"`
	After  *unstructured.Unstructured `json:"-"`
}

// Compare pairs the objects of two revisions by apiVersion, kind, namespace and name, and
// returns those added, changed or removed, in apply order (as render sorts objects), removed
// objects last.
func Compare(base, head []*unstructured.Unstructured) []*ObjectDiff {
	before := make(map[object.Ref]*unstructured.Unstructured, len(base))
	for _, u := range base {
		before[object.RefOf(u)] = u
	}
	seen := make(map[object.Ref]bool, len(head))
	var out []*ObjectDiff
	for _, u := range head {
		k := object.RefOf(u)
		seen[k] = true
		b, ok := before[k]
		switch {
		case !ok:
			out = append(out, newObjectDiff(DiffAdded, nil, u))
		default:
			if fields := object.DiffFields(b.Object, u.Object); len(fields) > 0 {
				c := newObjectDiff(DiffChanged, b, u)
				c.Fields = fields
				out = append(out, c)
			}
		}
	}
	for _, u := range base {
		if !seen[object.RefOf(u)] {
			out = append(out, newObjectDiff(DiffRemoved, u, nil))
		}
	}
	return out
}

func newObjectDiff(a DiffAction, before, after *unstructured.Unstructured) *ObjectDiff {
	u := after
	if u == nil {
		u = before
	}
	return &ObjectDiff{Action: a, Ref: object.RefOf(u), Source: u.GetAnnotations()[keys.Source], Before: before, After: after,
		GPUsBefore: object.GPUs(before), GPUsAfter: object.GPUs(after)}
}
