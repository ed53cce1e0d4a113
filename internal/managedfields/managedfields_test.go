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
