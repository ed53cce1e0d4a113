package object

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// secret is a Secret with data (values as the API server holds them, base64), stringData and
// annotations; a nil map is left out.
func secret(data, stringData, annotations map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": "hf", "namespace": "alice", "uid": "u1"}
	if annotations != nil {
		md["annotations"] = annotations
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md, "type": "Opaque"}
	if data != nil {
		obj["data"] = data
	}
	if stringData != nil {
		obj["stringData"] = stringData
	}
	return &unstructured.Unstructured{Object: obj}
}

// TestForDisplayMasksSecrets: every value of a Secret's data and stringData, and kubectl's
// last-applied-configuration, show as ***; the rest shows as it is, and the argument is left
// as it was. A ConfigMap's data is not masked.
func TestForDisplayMasksSecrets(t *testing.T) {
	u := secret(map[string]any{"HF_TOKEN": "aGZfczNjcmV0"}, map[string]any{"WANDB": "w4ndb"},
		map[string]any{lastApplied: `{"stringData":{"WANDB":"w4ndb"}}`, "team": "alice"})
	got := ForDisplay(u).Object
	want := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata":   map[string]any{"name": "hf", "namespace": "alice", "annotations": map[string]any{lastApplied: Masked, "team": "alice"}},
		"data":       map[string]any{"HF_TOKEN": Masked},
		"stringData": map[string]any{"WANDB": Masked}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ForDisplay = %v\nwant %v", got, want)
	}
	if u.Object["data"].(map[string]any)["HF_TOKEN"] != "aGZfczNjcmV0" || u.GetAnnotations()[lastApplied] == Masked || u.GetUID() != "u1" {
		t.Errorf("ForDisplay changed its argument: %v", u.Object)
	}
	cm := secret(map[string]any{"k": "v"}, nil, nil)
	cm.SetKind("ConfigMap")
	if v := ForDisplay(cm).Object["data"].(map[string]any)["k"]; v != "v" {
		t.Errorf("a ConfigMap's data shows as %v", v)
	}
	other := secret(map[string]any{"k": "v"}, nil, nil)
	other.SetAPIVersion("example.com/v1")
	if v := ForDisplay(other).Object["data"].(map[string]any)["k"]; v != "v" {
		t.Errorf("a Secret of another group shows its data as %v", v)
	}
}

// TestForDisplayPairMarksChangedSecretValues: a value that differs is "*** (before)" and
// "*** (after)", one that stays or is on one side only is ***; either side may be nil.
func TestForDisplayPairMarksChangedSecretValues(t *testing.T) {
	before := secret(map[string]any{"same": "czE=", "changed": "b2xk", "removed": "cg=="}, nil,
		map[string]any{lastApplied: `{"data":{"changed":"b2xk"}}`})
	after := secret(map[string]any{"same": "czE=", "changed": "bmV3", "added": "YQ=="}, map[string]any{"new": "plain"},
		map[string]any{lastApplied: `{"data":{"changed":"bmV3"}}`})
	b, a := ForDisplayPair(before, after)
	wantB := map[string]any{"same": Masked, "changed": MaskedBefore, "removed": Masked}
	wantA := map[string]any{"same": Masked, "changed": MaskedAfter, "added": Masked}
	if got := b.Object["data"]; !reflect.DeepEqual(got, wantB) {
		t.Errorf("before's data = %v, want %v", got, wantB)
	}
	if got := a.Object["data"]; !reflect.DeepEqual(got, wantA) {
		t.Errorf("after's data = %v, want %v", got, wantA)
	}
	if got := a.Object["stringData"]; !reflect.DeepEqual(got, map[string]any{"new": Masked}) {
		t.Errorf("after's stringData = %v", got)
	}
	if b.GetAnnotations()[lastApplied] != MaskedBefore || a.GetAnnotations()[lastApplied] != MaskedAfter {
		t.Errorf("last-applied-configuration: %q → %q", b.GetAnnotations()[lastApplied], a.GetAnnotations()[lastApplied])
	}
	if _, a := ForDisplayPair(nil, after); a.Object["data"].(map[string]any)["changed"] != Masked {
		t.Errorf("a created Secret shows %v", a.Object["data"])
	}
	if b, a := ForDisplayPair(before, nil); a != nil || b.Object["data"].(map[string]any)["changed"] != Masked {
		t.Errorf("a deleted Secret shows %v, %v", b.Object["data"], a)
	}
	if before.Object["data"].(map[string]any)["changed"] != "b2xk" || after.Object["data"].(map[string]any)["changed"] != "bmV3" {
		t.Error("ForDisplayPair changed its arguments")
	}
}

// TestDiffFieldsOfSecrets: the differences of two Secrets name the keys that change, are added
// or removed, and carry no value — whether the objects are raw or shown (DiffObjects); a
// stringData key that desired sets counts for the data key it writes.
func TestDiffFieldsOfSecrets(t *testing.T) {
	live := secret(map[string]any{"same": "czE=", "changed": "b2xk", "removed": "cg=="}, nil,
		map[string]any{lastApplied: `{"data":{"changed":"b2xk"}}`})
	next := secret(map[string]any{"same": "czE=", "changed": "bmV3", "added": "YQ=="}, nil,
		map[string]any{lastApplied: `{"data":{"changed":"bmV3"}}`})
	want := []FieldDiff{
		{Path: "data.added", New: Masked},
		{Path: "data.changed", Old: MaskedBefore, New: MaskedAfter},
		{Path: "data.removed", Old: Masked},
		{Path: lastAppliedPath, Old: MaskedBefore, New: MaskedAfter},
	}
	if got := DiffFields(live.Object, next.Object); !reflect.DeepEqual(got, want) {
		t.Errorf("DiffFields = %v\nwant %v", got, want)
	}
	if got := DiffObjects(live, next, next.Object); !reflect.DeepEqual(got, want) {
		t.Errorf("DiffObjects = %v\nwant %v", got, want)
	}
	if d := DiffFields(ForDisplay(live).Object, ForDisplay(next).Object); len(d) != 2 {
		t.Errorf("objects masked alone differ only in keys: %v", d) // hence DiffObjects
	}

	// A data map that appears is one field: its keys are named, its values masked.
	empty := secret(nil, nil, nil)
	got := DiffFields(empty.Object, next.Object)
	if len(got) != 2 || got[0].Path != "data" || !reflect.DeepEqual(got[0].New, map[string]any{"same": Masked, "changed": Masked, "added": Masked}) {
		t.Errorf("a data map that appears: %v", got)
	}

	// Desired sets stringData: the API server's data is its change.
	desired := secret(nil, map[string]any{"changed": "new"}, nil)
	got = DiffFieldsSetBy(live.Object, next.Object, desired.Object)
	if want := []FieldDiff{{Path: "data.changed", Old: MaskedBefore, New: MaskedAfter}, {Path: "data.removed", Old: Masked}}; !reflect.DeepEqual(got, want) {
		t.Errorf("DiffFieldsSetBy of stringData = %v\nwant %v", got, want)
	}
	for _, d := range append(DiffFields(live.Object, next.Object), got...) {
		for _, v := range []any{d.Old, d.New} {
			if s := Display(v); s != None && !strings.HasPrefix(s, Masked) {
				t.Errorf("%s shows %q", d.Path, s)
			}
		}
	}

	// A ConfigMap's data is not masked.
	a, b := live.DeepCopy(), next.DeepCopy()
	a.SetKind("ConfigMap")
	b.SetKind("ConfigMap")
	if got := DiffFields(a.Object, b.Object); got[1].Old != "b2xk" || got[1].New != "bmV3" {
		t.Errorf("a ConfigMap's diff: %v", got)
	}
}
