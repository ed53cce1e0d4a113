package reconciler

import (
	"context"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The calls in this file serve drift detection and correction (drift/detector): one object at a
// time, outside a plan.

// Resource resolves an object's kind to its resource, and tells whether it is namespaced.
func (m *Manager) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	rm, err := m.mapping(gvk)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return rm.Resource, rm.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// changeOf describes one desired object (as Plan prepared it) for a write outside a plan: its
// resource, scope and tenant. A tenant object outside its namespace is refused here too.
func (m *Manager) changeOf(u *unstructured.Unstructured) (*Change, error) {
	gvr, namespaced, err := m.Resource(u.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if msg := checkTenantScope(u, namespaced); msg != "" {
		return nil, fmt.Errorf("%s: %s", object.RefOf(u).String(), msg)
	}
	return &Change{Object: object.RefOf(u), Desired: u, resource: gvr, namespaced: namespaced, tenant: tenantOf(u)}, nil
}

// Get reads the live object of a desired one (nil, nil when it does not exist), as the
// manager's own identity.
func (m *Manager) Get(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvr, namespaced, err := m.Resource(desired.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	u, err := scoped(m.dyn, gvr, namespaced, desired.GetNamespace()).Get(ctx, desired.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, ignoreNotFound(err)
	}
	return u, nil
}

// ApplyOne applies one desired object as planned objects are applied: same field manager, same
// identity (a tenant object as its tenant). With force it takes back the fields that another
// manager took — only on a member of this inventory. A live object that gpuctl did not create
// and that is not marked adoptable is refused (ErrNotCreatedByGpuctl).
func (m *Manager) ApplyOne(ctx context.Context, desired *unstructured.Unstructured, force bool) error {
	c, err := m.changeOf(desired)
	if err != nil {
		return err
	}
	live, err := m.resource(c).Get(ctx, c.Object.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return fmt.Errorf("%s: get: %w", object.RefOf(desired).String(), err)
	default:
		if err := m.adoptionError(live, desired); err != nil {
			return fmt.Errorf("%s: apply: %w", object.RefOf(desired).String(), err)
		}
	}
	force = m.mayForce(live, force)
	err = m.write(ctx, c, func(ri dynamic.ResourceInterface) error {
		return m.applyOver(ctx, ri, desired, live, force)
	})
	if err != nil {
		return fmt.Errorf("%s: apply: %w", object.RefOf(desired).String(), err)
	}
	return nil
}

// ApplyNodeLabels applies gpuctl's labels on a node (the labels it owns there become exactly
// these), taking them back from other managers with force.
func (m *Manager) ApplyNodeLabels(ctx context.Context, node string, labels map[string]string, force bool) error {
	_, err := m.dyn.Resource(nodeGVR).Apply(ctx, node, nodeApply(node, labels),
		metav1.ApplyOptions{FieldManager: m.opts.FieldManager, Force: force})
	if err != nil {
		return fmt.Errorf("Node %s: apply labels: %w", node, err)
	}
	return nil
}

// Drift compares a live object (with its managedFields, as read) with its desired one (as Plan
// prepared it) and returns the fields gpuctl applies that differ, with the live value as Old and
// the desired as New; the fields left to Kueue are not among them (see QueueManaged). It costs
// nothing when the live object is InSync; otherwise a forced server-side dry-run apply tells
// what an apply would really change, so that server defaults and value normalisation are never
// reported. The dry-run is made as the identity that would apply.
func (m *Manager) Drift(ctx context.Context, desired, live *unstructured.Unstructured) ([]object.FieldDiff, error) {
	if m.InSync(desired, live) || kept(desired, live) {
		return nil, nil
	}
	c, err := m.changeOf(desired)
	if err != nil {
		return nil, err
	}
	ri, err := m.writer(c)
	if err != nil {
		return nil, err
	}
	body, _ := m.applied(desired, live)
	res, err := ri.Apply(ctx, desired.GetName(), body, metav1.ApplyOptions{FieldManager: m.opts.FieldManager,
		Force: true, DryRun: []string{metav1.DryRunAll}})
	if isImmutable(err) && keepable(desired, live) {
		return nil, nil // its file did not change: the next sync keeps it (keep.go)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: dry-run apply: %w", object.RefOf(desired).String(), err)
	}
	return object.DiffObjects(live, res, body.Object), nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
