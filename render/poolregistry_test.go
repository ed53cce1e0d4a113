package render

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestPoolRecordRoundTrip(t *testing.T) {
	tests := map[string]PoolRecord{
		"nodes":    {Name: "training-pool", Description: "for training", Nodes: []PoolRegistryEntry{{Name: "n1", GPUType: "a100-80g"}, {Name: "n2"}}},
		"no nodes": {Name: "empty", Nodes: []PoolRegistryEntry{}},
		"nil":      {Name: "nil-nodes"},
	}
	for name, rec := range tests {
		t.Run(name, func(t *testing.T) {
			cm := rec.ConfigMap(keys.SystemNamespace, "pools/p.yaml")
			if cm.Name != keys.PoolRegistryPrefix+rec.Name || cm.Namespace != keys.SystemNamespace ||
				cm.Annotations[keys.Source] != "pools/p.yaml" || cm.Labels[keys.Pool] != rec.Name {
				t.Errorf("metadata %+v", cm.ObjectMeta)
			}
			if !IsPoolRegistry(cm.Labels) || PoolRegistrySelector != keys.PoolRegistry+"="+cm.Labels[keys.PoolRegistry] {
				t.Errorf("labels %v do not match the selector %q", cm.Labels, PoolRegistrySelector)
			}
			got, err := DecodePoolRecord(cm)
			if err != nil {
				t.Fatal(err)
			}
			want := rec
			if want.Nodes == nil {
				want.Nodes = []PoolRegistryEntry{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded %+v, want %+v", got, want)
			}
		})
	}
}

func TestDecodePoolRecordLenient(t *testing.T) {
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: keys.PoolRegistryPrefix + "x", Namespace: "ns"}, Data: data}
	}
	got, err := DecodePoolRecord(cm(map[string]string{"description": "d"}))
	if err != nil || got.Name != "x" || got.Description != "d" || got.Nodes == nil || len(got.Nodes) != 0 {
		t.Errorf("no name, no nodes: %+v, %v", got, err)
	}
	got, err = DecodePoolRecord(cm(map[string]string{"name": "y", "nodes": "null"}))
	if err != nil || got.Name != "y" || got.Nodes == nil {
		t.Errorf("null nodes: %+v, %v", got, err)
	}
	got, err = DecodePoolRecord(cm(map[string]string{"name": "z", "nodes": "{not json"}))
	if err == nil || !strings.Contains(err.Error(), "ns/"+keys.PoolRegistryPrefix+"x") || got.Name != "z" ||
		got.Nodes == nil || len(got.Nodes) != 0 {
		t.Errorf("bad nodes: %+v, %v", got, err)
	}
	if IsPoolRegistry(map[string]string{keys.PoolRegistry: "false"}) || IsPoolRegistry(nil) {
		t.Error("IsPoolRegistry accepts a ConfigMap that is not marked")
	}
}

// TestIsPoolRegistryObject: the registry is a marked ConfigMap of the core group; the same
// label on another kind (a team may write one) or on a ConfigMap of another group is not.
func TestIsPoolRegistryObject(t *testing.T) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(PoolRecord{Name: "p"}.ConfigMap(keys.SystemNamespace, "pools/p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: m}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	if !IsPoolRegistryObject(cm) {
		t.Fatal("the registry ConfigMap is not recognised")
	}
	for what, edit := range map[string]func(u *unstructured.Unstructured){
		"a Secret":                       func(u *unstructured.Unstructured) { u.SetKind("Secret") },
		"a ConfigMap of another group":   func(u *unstructured.Unstructured) { u.SetAPIVersion("example.com/v1") },
		"a ConfigMap without the mark":   func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{keys.Pool: "p"}) },
		"a ConfigMap marked another way": func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{keys.PoolRegistry: "yes"}) },
	} {
		u := cm.DeepCopy()
		edit(u)
		if IsPoolRegistryObject(u) {
			t.Errorf("%s is taken for the registry", what)
		}
	}
}
