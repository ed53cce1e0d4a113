package object

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FieldDiff is one changed leaf field of an object.
type FieldDiff struct {
	// Path is the field in kubectl's dotted form, e.g. spec.template.spec.containers[0].image.
	Path string `json:"path"`
	// Old is the value before (nil: the field is added).
	Old any `json:"old,omitempty"`
	// New is the value after (nil: the field is removed).
	New any `json:"new,omitempty"`
}

// serverFields are the fields that the API server writes, never gpuctl.
var serverFields = [][]string{{"status"}, {"metadata", "managedFields"}, {"metadata", "resourceVersion"},
	{"metadata", "uid"}, {"metadata", "generation"}, {"metadata", "creationTimestamp"}, {"metadata", "selfLink"}}

// bookkeeping are gpuctl's annotations of its own bookkeeping (the applied-hash, a training
// Job's spec digest and kept-hash, render's record of a workload's Secret references), which a
// person does not write and diffs leave out.
var bookkeeping = []string{keys.AppliedHash, keys.SpecDigest, keys.KeptHash, keys.SecretRefs}

// ignoredFields are the paths of serverFields and of gpuctl's bookkeeping annotations, which
// diffs leave out.
var ignoredFields = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range bookkeeping {
		m["metadata.annotations."+k] = true
	}
	for _, f := range serverFields {
		m[strings.Join(f, ".")] = true
	}
	return m
}()

// ForDisplay returns a copy of u without the fields that the API server writes and without
// gpuctl's bookkeeping annotations, and with a Secret's values (of data, of stringData and of
// kubectl's last-applied-configuration) shown as Masked: the object as a person compares it
// with its file. nil stays nil. For two versions of an object shown side by side, use
// ForDisplayPair, which says which values of a Secret change.
func ForDisplay(u *unstructured.Unstructured) *unstructured.Unstructured {
	c, _ := ForDisplayPair(u, nil)
	return c
}

// ForDisplayPair is ForDisplay of two versions of an object, before and after a change, where
// a Secret's value that differs between them is MaskedBefore in before and MaskedAfter in
// after (as kubectl diff shows it), so that a diff of the two still says which values change
// and shows none. Either may be nil.
func ForDisplayPair(before, after *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	b, a := withoutServerFields(before), withoutServerFields(after)
	if (b == nil || !IsSecret(b.Object)) && (a == nil || !IsSecret(a.Object)) {
		return b, a
	}
	x, y := maskPair("", objectOf(b), objectOf(a))
	if b != nil {
		b.Object = x.(map[string]any)
	}
	if a != nil {
		a.Object = y.(map[string]any)
	}
	return b, a
}

// objectOf is u's content, or nil (no map) for a nil u.
func objectOf(u *unstructured.Unstructured) any {
	if u == nil {
		return nil
	}
	return u.Object
}

// withoutServerFields returns a copy of u without the fields that the API server writes and
// without gpuctl's bookkeeping annotations. nil stays nil.
func withoutServerFields(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	c := u.DeepCopy()
	for _, f := range serverFields {
		unstructured.RemoveNestedField(c.Object, f...)
	}
	if ann := c.GetAnnotations(); ann != nil {
		for _, k := range bookkeeping {
			delete(ann, k)
		}
		if len(ann) == 0 {
			unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
		} else {
			c.SetAnnotations(ann)
		}
	}
	return c
}

// DiffObjects is DiffFieldsSetBy of the display forms of before and after (ForDisplayPair):
// the fields that applying desired changes, as people are shown them. Either may be nil.
func DiffObjects(before, after *unstructured.Unstructured, desired map[string]any) []FieldDiff {
	b, a := ForDisplayPair(before, after)
	bo, _ := objectOf(b).(map[string]any)
	ao, _ := objectOf(a).(map[string]any)
	return DiffFieldsSetBy(bo, ao, desired)
}

// DropAppliedHash removes gpuctl's applied-hash annotation from u, and the annotations map if
// it held nothing else.
func DropAppliedHash(u *unstructured.Unstructured) {
	md, _ := u.Object["metadata"].(map[string]any)
	if ann, ok := md["annotations"].(map[string]any); ok { // in place: no copies
		delete(ann, keys.AppliedHash)
		if len(ann) == 0 {
			delete(md, "annotations")
		}
		return
	}
	ann := u.GetAnnotations()
	if ann == nil {
		return
	}
	delete(ann, keys.AppliedHash)
	if len(ann) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
	} else {
		u.SetAnnotations(ann)
	}
}

// DiffFields lists the leaf fields that differ between two objects (before and after), in
// path order; a map or list present on one side only is one field. Fields the API server
// writes (status, managedFields, resourceVersion, ...) and gpuctl's applied-hash are left out.
// Numbers are compared by value (1 and 1.0 are equal). The values of a Secret are never in the
// result: a key of its data or stringData that changes has Old MaskedBefore and New
// MaskedAfter, one added or removed has Masked on its side (see ForDisplayPair). Objects
// masked by ForDisplay compare equal in every value: diff them with DiffObjects.
func DiffFields(before, after map[string]any) []FieldDiff {
	return diff(before, after, unscoped{})
}

// DiffFieldsSetBy is DiffFields restricted to what applying desired changes: the fields that
// desired sets, and fields that disappear. A field that another writer (a controller) changed
// meanwhile is not desired's change and is left out; of a map that appears, only the keys
// desired sets count. A Secret's stringData sets the keys of its data.
func DiffFieldsSetBy(before, after, desired map[string]any) []FieldDiff {
	return diff(before, after, secretScope(desired))
}

func diff(before, after map[string]any, scope any) []FieldDiff {
	var out []FieldDiff
	walkDiff("", before, after, scope, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if IsSecret(before) || IsSecret(after) {
		maskDiffs(out)
	}
	return out
}

// walkDiff compares a (before) with b (after). scope is unscoped{} (every field counts) or
// the part of the desired object at path: nil there means desired does not set the field,
// which then counts only when it disappears.
func walkDiff(path string, a, b, scope any, out *[]FieldDiff) {
	if ignoredFields[path] || (scope == nil && b != nil) {
		return
	}
	if bm, ok := b.(map[string]any); ok && a == nil {
		if sm, scoped := scope.(map[string]any); scoped {
			// A map that appears: only the keys desired sets are its change (a controller may
			// have added the others meanwhile, e.g. a Deployment's revision annotation).
			if b = pick(bm, sm); b == nil {
				return
			}
		}
	}
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		sm, _ := scope.(map[string]any)
		for k := range union(am, bm) {
			walkDiff(joinPath(path, k), am[k], bm[k], child(scope, sm[k]), out)
		}
		return
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList && bIsList {
		sl, _ := scope.([]any)
		for i := 0; i < len(al) || i < len(bl); i++ {
			walkDiff(path+"["+strconv.Itoa(i)+"]", at(al, i), at(bl, i), child(scope, at(sl, i)), out)
		}
		return
	}
	if !scalarEqual(a, b, false) {
		*out = append(*out, FieldDiff{Path: path, Old: a, New: b})
	}
}

// at returns l[i], or nil past its end.
func at(l []any, i int) any {
	if i < len(l) {
		return l[i]
	}
	return nil
}

// unscoped marks a walk without a scope: every field counts.
type unscoped struct{}

// child returns the scope of a child field: everything when the walk has no scope.
func child(scope, sub any) any {
	if _, all := scope.(unscoped); all {
		return scope
	}
	return sub
}

// pick returns the entries of m whose keys keys has, or nil when there are none.
func pick(m, keys map[string]any) any {
	out := map[string]any{}
	for k, v := range m {
		if _, ok := keys[k]; ok {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func union(a, b map[string]any) map[string]bool {
	u := make(map[string]bool, len(a)+len(b))
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Contains reports whether every value that desired sets is present and equal in live
// (numbers compared by value, and resource quantities too: the API server writes 0.5 back as
// 500m); live may hold more (server defaults, other managers' fields). Lists must have the
// same length. A nil live contains nothing.
func Contains(desired, live *unstructured.Unstructured) bool {
	return live != nil && contains(desired.Object, live.Object, "")
}

// quantityParents are the maps whose values are resource quantities, compared by value.
var quantityParents = map[string]bool{"limits": true, "requests": true, "hard": true, "capacity": true, "allocatable": true}

// contains is Contains of two values; parent is the key under which desired sits.
func contains(desired, live any, parent string) bool {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			lv, ok := l[k]
			if !ok {
				return false
			}
			switch dv.(type) {
			case map[string]any, []any:
				if !contains(dv, lv, k) {
					return false
				}
			default: // a value of this map: a quantity when the map is limits, requests, ...
				if !scalarEqual(dv, lv, quantityParents[parent]) {
					return false
				}
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			return false
		}
		for i := range d {
			if !contains(d[i], l[i], "") {
				return false
			}
		}
		return true
	default:
		return scalarEqual(desired, live, false)
	}
}

func scalarEqual(a, b any, quantities bool) bool {
	if an, ok := number(a); ok {
		bn, ok := number(b)
		if ok && an == bn {
			return true
		}
	}
	if quantities {
		qa, errA := resource.ParseQuantity(fmt.Sprint(a))
		qb, errB := resource.ParseQuantity(fmt.Sprint(b))
		if errA == nil && errB == nil {
			return qa.Cmp(qb) == 0
		}
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
