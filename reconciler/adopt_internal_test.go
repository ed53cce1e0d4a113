package reconciler

import (
	"errors"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAdoptionAndForceRules: which live objects gpuctl may write (created by gpuctl, or marked
// adoptable) and which it may force (members of this inventory only).
func TestAdoptionAndForceRules(t *testing.T) {
	m := &Manager{inventoryID: "applyset-this-v1"}
	type testCase struct {
		labels, annotations map[string]string
		adopt, force        bool
	}
	cases := map[string]testCase{
		"member of this inventory": {labels: map[string]string{keys.ApplySetPartOf: "applyset-this-v1"}, adopt: true, force: true},
		"gpuctl's, another inventory": {labels: map[string]string{keys.ApplySetPartOf: "applyset-other-v1", keys.ManagedBy: keys.ManagedByValue},
			adopt: true},
		"created by someone else":         {},
		"another tool's managed-by":       {labels: map[string]string{keys.ManagedBy: "helm"}},
		"adoptable":                       {annotations: map[string]string{keys.Adopt: keys.AdoptAllowed}, adopt: true},
		"adopt annotation with any value": {annotations: map[string]string{keys.Adopt: "yes"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live := &unstructured.Unstructured{Object: map[string]any{}}
			live.SetLabels(tc.labels)
			live.SetAnnotations(tc.annotations)
			err := m.adoptionError(live, live)
			if (err == nil) != tc.adopt || (err != nil && !errors.Is(err, ErrNotCreatedByGpuctl)) {
				t.Errorf("adoption error %v, want allowed=%v", err, tc.adopt)
			}
			if got := m.mayForce(live, true); got != tc.force {
				t.Errorf("may force %v, want %v", got, tc.force)
			}
			if m.mayForce(live, false) {
				t.Error("forced without Force")
			}
		})
	}
}
