package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object builds an object by hand, as a renderer would.
func object(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetName(name)
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

func configMap(ns, name string, data map[string]any) *unstructured.Unstructured {
	return object("v1", "ConfigMap", ns, name, map[string]any{"data": data})
}

func namespace(name string) *unstructured.Unstructured {
	return object("v1", "Namespace", "", name, nil)
}

// asTenant marks an object as rendered from the tenant directory of namespace tenant.
func asTenant(u *unstructured.Unstructured, tenant string) *unstructured.Unstructured {
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[keys.Tenant] = tenant
	ann[keys.Source] = "teams/" + tenant + "/" + strings.ToLower(u.GetKind()) + ".yaml"
	u.SetAnnotations(ann)
	return u
}

// tenantIdentity is what the renderer adds (as admin objects) for a tenant namespace: the
// ServiceAccount gpuctl-tenant and its RoleBinding to the ClusterRole gpuctl-tenant.
func tenantIdentity(ns string) []*unstructured.Unstructured {
	sa := object("v1", "ServiceAccount", ns, keys.TenantServiceAccount, nil)
	rb := object("rbac.authorization.k8s.io/v1", "RoleBinding", ns, keys.TenantServiceAccount, map[string]any{
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": keys.TenantClusterRole},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": keys.TenantServiceAccount, "namespace": ns}},
	})
	return []*unstructured.Unstructured{sa, rb}
}

// tenantNamespace is a tenant namespace as the renderer makes it: Namespace and identity.
func tenantNamespace(ns string) []*unstructured.Unstructured {
	return append([]*unstructured.Unstructured{namespace(ns)}, tenantIdentity(ns)...)
}

// createNamespace creates a namespace outside gpuctl (no labels).
func createNamespace(e *env, name string) {
	e.t.Helper()
	_, err := e.kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
}

// forcingEnv is an env whose manager forces conflicts (Options.Force), with namespace ns.
func forcingEnv(t *testing.T, ns string) *env {
	t.Helper()
	opts := reconciler.DefaultOptions()
	opts.Force = true
	e := newEnv(t, opts)
	createNamespace(e, ns)
	return e
}

// plan plans objs, failing the test on a plan error.
func (e *env) plan(objs []*unstructured.Unstructured) *reconciler.Plan {
	e.t.Helper()
	p, err := e.manager.Plan(e.ctx, objs)
	if err != nil {
		e.t.Fatalf("plan: %v", err)
	}
	return p
}

// apply applies a plan and returns its change set and error (per-object failures included).
func (e *env) apply(p *reconciler.Plan) (*reconciler.ChangeSet, error) {
	e.t.Helper()
	cs, err := e.manager.Apply(e.ctx, p, nil)
	if cs == nil {
		e.t.Fatalf("apply: %v", err)
	}
	return cs, err
}

// failures lists "Kind ns/name: error" of a plan's failed changes.
func failures(p *reconciler.Plan) string {
	var out []string
	for _, c := range p.Failed() {
		out = append(out, c.Object.String()+": "+c.Error)
	}
	return strings.Join(out, "\n")
}

// result returns the result of one object in a change set.
func result(cs *reconciler.ChangeSet, kind, name string) reconciler.Result {
	for _, r := range cs.Results {
		if r.Object.Kind == kind && r.Object.Name == name {
			return r
		}
	}
	return reconciler.Result{}
}
