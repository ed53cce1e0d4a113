package reconciler

import (
	"context"
	"fmt"

	"github.com/gpuctl/gpuctl/render"
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

// client returns the client of an object's resource, in its namespace when namespaced.
func (m *Manager) client(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvr, namespaced, err := m.Resource(u.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if namespaced {
		return m.dyn.Resource(gvr).Namespace(u.GetNamespace()), nil
	}
	return m.dyn.Resource(gvr), nil
}

// Get reads the live object of a desired one (nil, nil when it does not exist).
func (m *Manager) Get(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	c, err := m.client(desired)
	if err != nil {
		return nil, err
	}
	u, err := c.Get(ctx, desired.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, ignoreNotFound(err)
	}
	return u, nil
}

// ApplyOne applies one desired object as planned objects are applied (same field manager);
// with force it takes back the fields that another manager took.
func (m *Manager) ApplyOne(ctx context.Context, desired *unstructured.Unstructured, force bool) error {
	c, err := m.client(desired)
	if err != nil {
		return err
	}
	_, err = c.Apply(ctx, desired.GetName(), desired, metav1.ApplyOptions{FieldManager: m.opts.FieldManager, Force: force})
	if err != nil {
		return fmt.Errorf("%s: apply: %w", render.ObjectID(desired), err)
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

// Drift compares a live object with its desired one (as Plan prepared it) and returns the
// fields gpuctl sets that differ, with the live value as Old and the desired as New. It costs
// nothing when the live object holds every desired value; otherwise a forced server-side
// dry-run apply tells what an apply would really change, so that server defaults and value
// normalisation are never reported.
func (m *Manager) Drift(ctx context.Context, desired, live *unstructured.Unstructured) ([]FieldDiff, error) {
	if Contains(desired, live) {
		return nil, nil
	}
	c, err := m.client(desired)
	if err != nil {
		return nil, err
	}
	res, err := c.Apply(ctx, desired.GetName(), desired, metav1.ApplyOptions{FieldManager: m.opts.FieldManager,
		Force: true, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, fmt.Errorf("%s: dry-run apply: %w", render.ObjectID(desired), err)
	}
	return diffOwned(cleanForDisplay(live).Object, cleanForDisplay(res).Object, desired.Object), nil
}

// Contains reports whether every value that desired sets is present and equal in live
// (quantities and numbers compared by value; live may hold more).
func Contains(desired, live *unstructured.Unstructured) bool {
	return live != nil && contains(desired.Object, live.Object, "")
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
