package managedfields

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLabels(t *testing.T) {
	raw := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "gpuctl", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: raw(`{"f:metadata":{"f:labels":{"f:g8s.host/pool":{},".":{}}}}`)},
		{Manager: "gpuctl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: raw(`{"f:metadata":{"f:labels":{"f:old":{}}}}`)},
		{Manager: "other", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: raw(`{"f:metadata":{"f:labels":{"f:x":{}}}}`)},
		{Manager: "gpuctl", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: raw(`not json`)},
	}
	if got := Labels(entries, "gpuctl", true); len(got) != 1 || !got["g8s.host/pool"] {
		t.Fatalf("apply only: %v", got)
	}
	if got := Labels(entries, "gpuctl", false); len(got) != 2 || !got["old"] {
		t.Fatalf("any operation: %v", got)
	}
}

func TestOwns(t *testing.T) {
	raw := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "gpuctl", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: raw(`{"f:spec":{"f:suspend":{},"f:template":{"f:spec":{"f:nodeSelector":{"f:pool":{}}}}}}`)},
		{Manager: "kueue", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: raw(`{"f:spec":{"f:template":{"f:metadata":{".":{},"f:x":{}}}}}`)},
		{Manager: "broken", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: raw(`not json`)},
	}
	for _, tc := range []struct {
		manager string
		path    []string
		want    bool
	}{
		{"gpuctl", []string{"spec", "suspend"}, true},
		{"kueue", []string{"spec", "suspend"}, false},
		{"gpuctl", []string{"spec", "template"}, false}, // only fields below it
		{"kueue", []string{"spec", "template", "metadata"}, true},
		{"gpuctl", []string{"spec", "template", "spec", "nodeSelector", "pool"}, true},
		{"gpuctl", []string{"spec", "parallelism"}, false},
		{"broken", []string{"spec", "suspend"}, false},
		{"nobody", []string{"spec", "suspend"}, false},
	} {
		if got := Owns(entries, tc.manager, tc.path...); got != tc.want {
			t.Errorf("Owns(%s, %v) = %v, want %v", tc.manager, tc.path, got, tc.want)
		}
	}
}
