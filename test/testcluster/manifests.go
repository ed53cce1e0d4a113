package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// TenantRoleFile is the repository path of the tenant ClusterRole (gpuctl-tenant) that the
// reconciler binds in every tenant namespace.
const TenantRoleFile = "deploy/base/tenant-rbac.yaml"

// ApplyFile applies every object of a YAML file of the repository (path relative to its root,
// e.g. "deploy/base/rbac.yaml") with server-side apply as the admin, taking every field.
func (c *Cluster) ApplyFile(ctx context.Context, path string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err
	}
	return c.applyYAML(ctx, path, data)
}

// applyYAML applies every object of a YAML stream as ApplyFile does; name names the stream in
// errors.
func (c *Cluster) applyYAML(ctx context.Context, name string, data []byte) error {
	objs, err := decodeYAML(name, data)
	if err != nil {
		return err
	}
	return c.applyObjects(ctx, name, objs)
}

// decodeYAML returns the objects of a YAML stream, skipping empty documents; name names the
// stream in errors.
func decodeYAML(name string, data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// applyObjects applies objs in order with server-side apply as the admin, taking every field;
// name names where they come from in errors.
func (c *Cluster) applyObjects(ctx context.Context, name string, objs []*unstructured.Unstructured) error {
	cfg := c.RESTConfig()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", name, gvk.Kind, u.GetName(), err)
		}
		ri := dynamic.ResourceInterface(dyn.Resource(m.Resource))
		if u.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "testcluster", Force: true}); err != nil {
			return fmt.Errorf("%s: %s %s: %w", name, gvk.Kind, u.GetName(), err)
		}
	}
	return nil
}

// InstallTenantRole installs the tenant ClusterRole from deploy/ (TenantRoleFile), which the
// RoleBinding gpuctl-tenant of each tenant namespace refers to.
func (c *Cluster) InstallTenantRole(ctx context.Context) error {
	return c.ApplyFile(ctx, TenantRoleFile)
}
