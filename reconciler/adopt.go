package reconciler

import (
	"errors"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ErrNotCreatedByGpuctl is matched by errors.Is for the refusal to take over a live object
// that gpuctl did not create and that an admin did not mark adoptable.
var ErrNotCreatedByGpuctl = errors.New("exists and was not created by gpuctl")

// createdByGpuctl reports whether a live object carries gpuctl's marks: this inventory's
// ApplySet part-of label, or gpuctl's managed-by label.
func (m *Manager) createdByGpuctl(live *unstructured.Unstructured) bool {
	l := live.GetLabels()
	return l[keys.ApplySetPartOf] == m.inventoryID || l[keys.ManagedBy] == keys.ManagedByValue
}

// adoptionError refuses a desired object whose live object gpuctl did not create, unless an
// admin annotated the live object keys.Adopt=keys.AdoptAllowed. Taking such an object over
// would let a file change it, and deleting the file would prune it.
func (m *Manager) adoptionError(live, desired *unstructured.Unstructured) error {
	if m.createdByGpuctl(live) || live.GetAnnotations()[keys.Adopt] == keys.AdoptAllowed {
		return nil
	}
	return fmt.Errorf("%w; an admin can annotate the live object %s=%s to let gpuctl take it over%s",
		ErrNotCreatedByGpuctl, keys.Adopt, keys.AdoptAllowed, declaredIn(desired))
}

// mayForce reports whether an apply may take fields from other managers: only when forcing is
// asked for and the live object is a member of this inventory. An object being adopted is
// first applied without force, so that it keeps every field another manager set.
func (m *Manager) mayForce(live *unstructured.Unstructured, force bool) bool {
	return force && live != nil && live.GetLabels()[keys.ApplySetPartOf] == m.inventoryID
}
