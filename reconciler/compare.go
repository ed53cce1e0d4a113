package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// appliedHash is the hash of the configuration gpuctl applies for an object, without the
// hash annotation itself: equal hashes mean equal configurations.
func appliedHash(u *unstructured.Unstructured) string {
	if _, ok := u.GetAnnotations()[keys.AppliedHash]; !ok {
		return hashOf(u)
	}
	c := u.DeepCopy()
	dropAppliedHash(c)
	return hashOf(c)
}

// hashOf hashes an object as it is.
func hashOf(u *unstructured.Unstructured) string {
	b, err := json.Marshal(u.Object) // map keys are sorted: the same object gives the same bytes
	if err != nil {
		panic(fmt.Sprintf("reconciler: hash %s: %v", RefOf(u), err)) // unstructured objects always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// upToDate decides locally, without a request, that a live object needs no apply: the
// configuration last applied (its hash) is the desired one, and every desired value is still
// in the live object. False means "cannot tell": a server-side dry-run decides.
func upToDate(desired, live *unstructured.Unstructured) bool {
	if live == nil || live.GetAnnotations()[keys.AppliedHash] != desired.GetAnnotations()[keys.AppliedHash] {
		return false
	}
	return contains(desired.Object, live.Object, "")
}

// quantityParents are the maps whose values are resource quantities, compared by value
// (the API server writes 0.5 back as 500m).
var quantityParents = map[string]bool{"limits": true, "requests": true, "hard": true, "capacity": true, "allocatable": true}

// contains reports whether every value of desired is present and equal in live; live may hold
// more (server defaults, other managers' fields). Lists must have the same length. parent is
// the key under which desired sits.
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

// FieldDiff is one changed field of an object.
type FieldDiff struct {
	// Path is the field in kubectl's dotted form, e.g. spec.template.spec.containers[0].image.
	Path string `json:"path"`
	// Old is the live value (nil: the field is added).
	Old any `json:"old,omitempty"`
	// New is the value after the apply (nil: the field is removed).
	New any `json:"new,omitempty"`
}

// ignoredFields are written by the API server, never by gpuctl, and are left out of diffs.
var ignoredFields = map[string]bool{
	"status": true, "metadata.managedFields": true, "metadata.resourceVersion": true, "metadata.uid": true,
	"metadata.generation": true, "metadata.creationTimestamp": true, "metadata.selfLink": true,
	"metadata.annotations." + keys.AppliedHash: true,
}

// DiffFields lists the leaf fields that differ between two objects, in path order; a map or
// list present on one side only is one field. Fields the API server writes (status,
// managedFields, resourceVersion, ...) and gpuctl's applied-hash are left out.
func DiffFields(live, next map[string]any) []FieldDiff { return diffFields(live, next) }

// diffFields lists the leaf fields that differ between two objects, in path order.
func diffFields(live, next map[string]any) []FieldDiff {
	var out []FieldDiff
	walkDiff("", live, next, unscoped{}, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// diffOwned is diffFields restricted to what an apply of desired changes: fields that desired
// sets, and fields that disappear. A field that another writer (a controller) changed between
// the list and the dry-run is not gpuctl's change and is left out.
func diffOwned(live, next, desired map[string]any) []FieldDiff {
	var out []FieldDiff
	walkDiff("", live, next, desired, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// walkDiff compares a (before) with b (after). scope is unscoped{} (every field counts) or
// the part of the desired object at path: nil there means gpuctl does not set the field, which
// then counts only when it disappears.
func walkDiff(path string, a, b, scope any, out *[]FieldDiff) {
	if ignoredFields[path] || (scope == nil && b != nil) {
		return
	}
	if bm, ok := b.(map[string]any); ok && a == nil {
		if sm, scoped := scope.(map[string]any); scoped {
			// A map that appears: only the keys gpuctl sets are its change (a controller may
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
		for i := 0; i < len(al) || i < len(bl); i++ {
			var av, bv any
			if i < len(al) {
				av = al[i]
			}
			if i < len(bl) {
				bv = bl[i]
			}
			sl, _ := scope.([]any)
			var si any
			if i < len(sl) {
				si = sl[i]
			}
			walkDiff(path+"["+strconv.Itoa(i)+"]", av, bv, child(scope, si), out)
		}
		return
	}
	if !scalarEqual(a, b, false) {
		*out = append(*out, FieldDiff{Path: path, Old: a, New: b})
	}
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

// cleanForDisplay drops the fields that the API server writes, for diffs and printing.
func cleanForDisplay(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	c := u.DeepCopy()
	delete(c.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	dropAppliedHash(c)
	return c
}

// dropAppliedHash removes gpuctl's applied-hash annotation, and the annotations map if it
// held nothing else.
func dropAppliedHash(u *unstructured.Unstructured) {
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

// ForDisplay returns a copy of an object without the fields that the API server writes
// (status, managedFields, resourceVersion, ...) and gpuctl's applied-hash, for diffs.
func ForDisplay(u *unstructured.Unstructured) *unstructured.Unstructured { return cleanForDisplay(u) }

// Digest identifies a set of desired objects as Plan prepared them (each carries its
// applied-hash): equal digests mean the same objects with the same configuration.
func Digest(objects []*unstructured.Unstructured) string {
	lines := make([]string, 0, len(objects))
	for _, u := range objects {
		h := u.GetAnnotations()[keys.AppliedHash]
		if h == "" {
			h = hashOf(u)
		}
		lines = append(lines, RefOf(u).key()+" "+h)
	}
	sort.Strings(lines)
	sum := sha256.New()
	for _, l := range lines {
		sum.Write([]byte(l + "\n"))
	}
	return hex.EncodeToString(sum.Sum(nil)[:16])
}
