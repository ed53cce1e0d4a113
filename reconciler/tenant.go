package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// A tenant object is one that the renderer annotated with keys.Tenant: it comes from a
// directory mapped to a namespace, whose files may be written by someone hostile. The engine
// holds such objects to their namespace twice: at plan time (tenantScopeError) and, with
// Options.ImpersonateTenants, by writing them as the tenant's ServiceAccount, so that the API
// server refuses whatever the tenant ClusterRole does not allow.

// tenantStageOffset is added to the stage of tenant objects: they are applied after every admin
// object (the tenant's Namespace, ServiceAccount and RoleBinding among them) and pruned before.
const tenantStageOffset = 100

// tenantRBACWait bounds the retries of a tenant's write that the API server refuses as
// Forbidden: right after gpuctl created the tenant's RoleBinding, the authorizer may not know
// it yet.
var tenantRBACWait = 5 * time.Second

// TenantUser is the user that a tenant's objects are written as:
// system:serviceaccount:<namespace>:gpuctl-tenant.
func TenantUser(namespace string) string {
	return "system:serviceaccount:" + namespace + ":" + keys.TenantServiceAccount
}

// tenantOf returns the tenant namespace of an object: "" for admin objects.
func tenantOf(u *unstructured.Unstructured) string { return object.AnnotationOf(u, keys.Tenant) }

// checkTenantScope is the plan-time scope rule of tenant objects. Tests switch it off to show
// that the second layer (the tenant's identity) holds on its own.
var checkTenantScope = tenantScopeError

// tenantScopeError returns why a tenant object is refused — it is cluster-scoped, or in a
// namespace other than its tenant's — or "" when it may be applied. Scope comes from the
// cluster's discovery (namespaced), not from a list of kinds.
func tenantScopeError(u *unstructured.Unstructured, namespaced bool) string {
	t := tenantOf(u)
	switch {
	case t == "":
		return ""
	case !namespaced:
		return fmt.Sprintf("refused by rule tenant-scope: %s is cluster-scoped, and a tenant directory (namespace %q) may hold only namespaced objects%s",
			u.GetKind(), t, declaredIn(u))
	case u.GetNamespace() != t:
		return fmt.Sprintf("refused by rule tenant-namespace: the object is in namespace %q, and a tenant directory may write only into its own namespace %q%s",
			u.GetNamespace(), t, declaredIn(u))
	}
	return ""
}

// declaredIn names the file an object came from, for error messages.
func declaredIn(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	if src := u.GetAnnotations()[keys.Source]; src != "" {
		return " (declared in " + src + ")"
	}
	return ""
}

// impersonated reports whether a change is written as its tenant: not in a plan made with
// limited credentials without the inventory (they are not gpuctl's, and may not impersonate).
func (m *Manager) impersonated(c *Change) bool {
	return c.tenant != "" && m.opts.ImpersonateTenants && !c.limited
}

// tenantClient returns the client that acts as a tenant's ServiceAccount, one per namespace.
func (m *Manager) tenantClient(namespace string) (dynamic.Interface, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.tenants[namespace]; d != nil {
		return d, nil
	}
	cfg := rest.CopyConfig(m.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: TenantUser(namespace)}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	m.tenants[namespace] = d
	return d, nil
}

// writer returns the client that writes a change's object: its tenant's for an impersonated
// change, else the manager's own.
func (m *Manager) writer(c *Change) (dynamic.ResourceInterface, error) {
	if !m.impersonated(c) {
		return m.resource(c), nil
	}
	d, err := m.tenantClient(c.tenant)
	if err != nil {
		return nil, err
	}
	return scoped(d, c.resource, c.namespaced, c.Object.Namespace), nil
}

// tenantReader returns the client that reads a tenant's object as the tenant, for the reads
// that the reconciler's own identity is refused (deploy/ grants it no access to Secrets; the
// tenant ClusterRole does, in the tenant's namespace); nil for admin objects. Before the
// tenant's identity exists (the first sync of a team), such a read fails the object until the
// next sync.
func (m *Manager) tenantReader(c *Change) dynamic.ResourceInterface {
	if !m.impersonated(c) || c.limited {
		return nil
	}
	w, err := m.writer(c)
	if err != nil {
		return nil
	}
	return w
}

// allTenant reports whether every change is a tenant object of one namespace (a list of them
// may then be read as that tenant).
func allTenant(cs []*Change) bool {
	for _, c := range cs {
		if c.tenant == "" || c.tenant != cs[0].tenant {
			return false
		}
	}
	return len(cs) > 0
}

// write runs one write of a change with its writer. A tenant's write refused as Forbidden is
// retried with a short backoff for up to tenantRBACWait (the RoleBinding may be new).
func (m *Manager) write(ctx context.Context, c *Change, fn func(dynamic.ResourceInterface) error) error {
	ri, err := m.writer(c)
	if err != nil {
		return err
	}
	err = fn(ri)
	if !m.impersonated(c) {
		return err
	}
	deadline := time.Now().Add(tenantRBACWait)
	for delay := 50 * time.Millisecond; apierrors.IsForbidden(err) && time.Now().Add(delay).Before(deadline); delay = min(2*delay, time.Second) {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		err = fn(ri)
	}
	return err
}

// isTenantIdentity tells the admin objects that let a tenant's objects be written: the
// ServiceAccount and the RoleBinding gpuctl-tenant of a namespace.
func isTenantIdentity(c *Change) bool {
	if c.tenant != "" || c.Object.Name != keys.TenantServiceAccount || c.Object.Namespace == "" {
		return false
	}
	return (c.Object.Group() == "" && c.Object.Kind == "ServiceAccount") ||
		(c.Object.Group() == "rbac.authorization.k8s.io" && c.Object.Kind == "RoleBinding")
}

// pendingIdentities returns the tenant namespaces whose identity this plan writes: until it
// is applied, the API server refuses the tenant's dry-runs.
func pendingIdentities(changes []*Change) map[string]bool {
	out := map[string]bool{}
	for _, c := range changes {
		if isTenantIdentity(c) && c.Error == "" && c.Action != ActionUnchanged {
			out[c.Object.Namespace] = true
		}
	}
	return out
}

// skipDependents fails the changes that depend on a failed one: the objects of a Namespace
// whose change failed and that does not exist, and (when tenants are impersonated) the tenant objects of a namespace
// whose identity failed. Objects found up to date stay unchanged: nothing is written to them.
func (m *Manager) skipDependents(changes []*Change) {
	failedNS, failedIdentity := map[string]string{}, map[string]string{}
	for _, c := range changes {
		switch {
		case c.Error == "":
		case c.Object.Group() == "" && c.Object.Kind == "Namespace" && c.Live == nil:
			// A Namespace that exists but is not adopted still holds what is declared in it;
			// only one that could not be created takes its objects down with it.
			failedNS[c.Object.Name] = c.Object.String()
		case isTenantIdentity(c):
			failedIdentity[c.Object.Namespace] = c.Object.String()
		}
	}
	if len(failedNS) == 0 && len(failedIdentity) == 0 {
		return
	}
	for _, c := range changes {
		if c.Error != "" || c.Action == ActionUnchanged {
			continue
		}
		if what, ok := failedNS[c.Object.Namespace]; ok && c.namespaced {
			c.fail("not applied: it depends on %s, which failed", what)
		} else if what, ok := failedIdentity[c.tenant]; ok && m.impersonated(c) {
			c.fail("not applied: the tenant's identity %s failed", what)
		}
	}
}

// refuseSecondDeclarations fails each desired change whose object (group, kind, namespace,
// name) another change declares too, under another API version (render refuses two
// identical objects, not two versions of one, such as an autoscaling/v1 and an
// autoscaling/v2 HorizontalPodAutoscaler). The admin's declaration is kept and a tenant's
// fails, so that a team never takes over an object that the platform declares in its
// namespace; of two of the same side, the first is kept.
func refuseSecondDeclarations(changes []*Change) {
	kept := map[string]*Change{}
	for _, c := range changes {
		k := c.objectKey()
		first, dup := kept[k]
		if !dup {
			kept[k] = c
			continue
		}
		refused, keep := c, first
		if first.tenant != "" && c.tenant == "" {
			refused, keep = first, c
			kept[k] = c
		}
		refused.fail("refused by rule declared-once: %s/%s %s is also declared%s", keep.Object.Group(), keep.Object.Version(), keep.Object, declaredIn(keep.Desired))
	}
}
