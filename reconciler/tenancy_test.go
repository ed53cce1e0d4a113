package reconciler_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/testcluster"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// TestTenantObjectsWrittenAsTenant: a tenant's objects are applied after its identity, in the
// same first sync (the RoleBinding is new: the authorizer's lag is retried), then updated and
// pruned as the tenant. A kind outside the tenant ClusterRole, in the tenant's own namespace,
// is refused by the API server: the writes are the tenant's, not gpuctl's.
func TestTenantObjectsWrittenAsTenant(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "tenant-a"
	objs := func(value string, withLimits bool) []*unstructured.Unstructured {
		out := append(tenantNamespace(ns),
			asTenant(configMap(ns, "settings", map[string]any{"k": value}), ns),
			asTenant(object("v1", "Service", ns, "web", map[string]any{"spec": map[string]any{
				"selector": map[string]any{"app": "web"}, "ports": []any{map[string]any{"port": int64(80)}}}}), ns))
		if withLimits {
			out = append(out, asTenant(object("v1", "LimitRange", ns, "limits", map[string]any{"spec": map[string]any{
				"limits": []any{map[string]any{"type": "Container", "max": map[string]any{"cpu": "64"}}}}}), ns))
		}
		return out
	}
	plan := e.plan(objs("1", true))
	// Every admin object comes before every tenant object.
	lastAdmin, firstTenant := -1, len(plan.Changes)
	for i, c := range plan.Changes {
		if c.Desired != nil && c.Desired.GetAnnotations()[keys.Tenant] != "" {
			firstTenant = min(firstTenant, i)
		} else {
			lastAdmin = i
		}
	}
	if lastAdmin > firstTenant {
		t.Fatalf("an admin object is planned after a tenant object:\n%s", actions(plan))
	}
	cs, err := e.apply(plan)
	r := result(cs, "LimitRange", "limits")
	if err == nil || len(cs.Failed()) != 1 || !strings.Contains(r.Error, "forbidden") ||
		!strings.Contains(r.Error, reconciler.TenantUser(ns)) {
		t.Fatalf("the LimitRange (not a tenant kind) should be refused to %s, and nothing else: %v", reconciler.TenantUser(ns), err)
	}
	if _, err := e.kube.CoreV1().LimitRanges(ns).Get(e.ctx, "limits", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused LimitRange exists: %v", err)
	}
	if cm, err := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, "settings", metav1.GetOptions{}); err != nil || cm.Data["k"] != "1" {
		t.Fatalf("tenant ConfigMap not applied: %v", err)
	}

	// update: dry-run and apply as the tenant
	plan = e.plan(objs("2", false))
	if got := actions(plan); got != "update ConfigMap tenant-a/settings" {
		t.Fatalf("second sync:\n%s", got)
	}
	if _, err := e.apply(plan); err != nil {
		t.Fatal(err)
	}
	if cm, _ := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, "settings", metav1.GetOptions{}); cm.Data["k"] != "2" {
		t.Fatalf("tenant ConfigMap not updated: %v", cm.Data)
	}

	// prune as the tenant
	e.opts.MaxPrune = 1
	e = newEnvSame(t, e)
	plan = e.plan(objs("2", false)[:4])
	if got := actions(plan); got != "delete Service tenant-a/web" {
		t.Fatalf("prune sync:\n%s", got)
	}
	if _, err := e.apply(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.CoreV1().Services(ns).Get(e.ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("tenant Service not pruned: %v", err)
	}
}

// scopeAttack is a tenant's attempt to reach beyond its namespace: a ClusterRoleBinding that
// makes its default ServiceAccount cluster-admin, and a ConfigMap in another team's namespace.
func scopeAttack(tenant, victim string) []*unstructured.Unstructured {
	crb := object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", tenant+"-admin", map[string]any{
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": tenant}},
	})
	return append(tenantNamespace(tenant),
		asTenant(configMap(tenant, "own", map[string]any{"k": "v"}), tenant),
		asTenant(crb, tenant),
		asTenant(configMap(victim, "planted", map[string]any{"k": "v"}), tenant))
}

// TestTenantScopeRefusedAtPlanTime (finding 6): a tenant's cluster-scoped object and its object
// in another namespace fail at plan time, naming the file and the rule; nothing of them is
// written; the tenant's own object is applied.
func TestTenantScopeRefusedAtPlanTime(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	createNamespace(e, "victim-1")
	plan := e.plan(scopeAttack("tenant-b", "victim-1"))
	crb, planted := find(plan, "ClusterRoleBinding", "tenant-b-admin"), find(plan, "ConfigMap", "planted")
	for c, want := range map[*reconciler.Change]string{
		crb:     "refused by rule tenant-scope: ClusterRoleBinding is cluster-scoped, and a tenant directory (namespace \"tenant-b\") may hold only namespaced objects (declared in teams/tenant-b/clusterrolebinding.yaml)",
		planted: "refused by rule tenant-namespace: the object is in namespace \"victim-1\", and a tenant directory may write only into its own namespace \"tenant-b\" (declared in teams/tenant-b/configmap.yaml)",
	} {
		if c.Action != reconciler.ActionSkipped || c.Error != want {
			t.Errorf("%s: %s %q, want skipped %q", c.Object, c.Action, c.Error, want)
		}
	}
	if !strings.HasSuffix(plan.Summary(), "4 to create, 2 failed") {
		t.Errorf("summary %q", plan.Summary())
	}
	cs, err := e.apply(plan)
	if err == nil || len(cs.Failed()) != 2 {
		t.Fatalf("apply: %v", err)
	}
	assertAttackFailed(t, e, "tenant-b", "victim-1")
}

// TestTenantScopeHeldByAPIServer (layer 2 alone): with the plan-time rule switched off, the
// same objects are planned, and the API server refuses them because they are written as the
// tenant's ServiceAccount.
func TestTenantScopeHeldByAPIServer(t *testing.T) {
	defer reconciler.SwitchOffTenantScopeCheck()()
	defer reconciler.SetTenantRBACWait(time.Second)()
	e := newEnv(t, reconciler.DefaultOptions())
	createNamespace(e, "victim-2")
	plan := e.plan(scopeAttack("tenant-c", "victim-2"))
	if len(plan.Failed()) != 0 || plan.Count(reconciler.ActionCreate) != 6 {
		t.Fatalf("with the rule off, all should be planned:\n%s\n%s", actions(plan), failures(plan))
	}
	cs, err := e.apply(plan)
	if err == nil || len(cs.Failed()) != 2 {
		t.Fatalf("apply: %d failed: %v", len(cs.Failed()), err)
	}
	for _, name := range []string{"tenant-c-admin", "planted"} {
		r := result(cs, map[string]string{"tenant-c-admin": "ClusterRoleBinding", "planted": "ConfigMap"}[name], name)
		if !strings.Contains(r.Error, "forbidden") || !strings.Contains(r.Error, reconciler.TenantUser("tenant-c")) {
			t.Errorf("%s: %q, want forbidden to %s", name, r.Error, reconciler.TenantUser("tenant-c"))
		}
	}
	assertAttackFailed(t, e, "tenant-c", "victim-2")
}

func assertAttackFailed(t *testing.T, e *env, tenant, victim string) {
	t.Helper()
	if _, err := e.kube.RbacV1().ClusterRoleBindings().Get(e.ctx, tenant+"-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the tenant's ClusterRoleBinding exists: %v", err)
	}
	if _, err := e.kube.CoreV1().ConfigMaps(victim).Get(e.ctx, "planted", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the tenant's ConfigMap in %s exists: %v", victim, err)
	}
	if _, err := e.kube.CoreV1().ConfigMaps(tenant).Get(e.ctx, "own", metav1.GetOptions{}); err != nil {
		t.Errorf("the tenant's own ConfigMap was not applied: %v", err)
	}
}

// TestTenantMemberPrunedAsTenant: a live member carrying the tenant annotation is deleted as
// that tenant, so it cannot be deleted outside the tenant's namespace.
func TestTenantMemberPrunedAsTenant(t *testing.T) {
	defer reconciler.SetTenantRBACWait(time.Second)()
	opts := reconciler.DefaultOptions()
	opts.ImpersonateTenants, opts.MaxPrune = false, 1
	e := newEnv(t, opts)
	createNamespace(e, "elsewhere")
	restore := reconciler.SwitchOffTenantScopeCheck()
	keep := func() []*unstructured.Unstructured { return tenantNamespace("tenant-e") }
	// written by gpuctl's own identity (impersonation off): a member in another namespace
	e.sync(append(keep(), asTenant(configMap("elsewhere", "stray", map[string]any{"k": "v"}), "tenant-e")))
	restore()

	e.opts.ImpersonateTenants = true
	e = newEnvSame(t, e)
	plan := e.plan(keep())
	if got := actions(plan); got != "delete ConfigMap elsewhere/stray" {
		t.Fatalf("prune plan:\n%s", got)
	}
	cs, err := e.apply(plan)
	if r := result(cs, "ConfigMap", "stray"); err == nil || !strings.Contains(r.Error, reconciler.TenantUser("tenant-e")) {
		t.Fatalf("prune of a tenant member outside its namespace: %v", err)
	}
	if _, err := e.kube.CoreV1().ConfigMaps("elsewhere").Get(e.ctx, "stray", metav1.GetOptions{}); err != nil {
		t.Fatalf("deleted by gpuctl's own identity: %v", err)
	}
}

// TestTenantRoleMatchesTenantKinds: the tenant ClusterRole in deploy/ grants exactly the
// resources of render.DefaultTenantKinds, each with every verb an apply and a prune need.
func TestTenantRoleMatchesTenantKinds(t *testing.T) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, testcluster.TenantRoleFile))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	if role.Name != keys.TenantClusterRole {
		t.Fatalf("role %q, want %q", role.Name, keys.TenantClusterRole)
	}
	verbs := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	var granted []string
	for _, r := range role.Rules {
		got := slices.Sorted(slices.Values(r.Verbs))
		if !slices.Equal(got, verbs) || len(r.ResourceNames) > 0 {
			t.Errorf("rule %v: verbs %v, want %v on every resource", r.Resources, got, verbs)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				granted = append(granted, schema.GroupResource{Group: g, Resource: res}.String())
			}
		}
	}
	cfg := testcluster.Current().RESTConfig()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	var want []string
	for _, k := range render.DefaultTenantKinds() {
		kind, group, _ := strings.Cut(k, ".")
		m, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		want = append(want, m.Resource.GroupResource().String())
	}
	slices.Sort(granted)
	slices.Sort(want)
	if !slices.Equal(granted, want) {
		t.Fatalf("the tenant ClusterRole grants\n  %v\nrender.DefaultTenantKinds are\n  %v", granted, want)
	}
}

// TestTenantIdentityCreatedWithTheChange: objects applied before tenants were impersonated
// are updated in the very sync that creates the tenant's identity: the tenant's dry-run cannot
// succeed before it exists, so the change is planned from the live object, then applied as
// the tenant once the RoleBinding is there.
func TestTenantIdentityCreatedWithTheChange(t *testing.T) {
	opts := reconciler.DefaultOptions()
	opts.ImpersonateTenants = false
	e := newEnv(t, opts)
	ns := "tenant-g"
	cm := func(v string) *unstructured.Unstructured {
		return asTenant(configMap(ns, "settings", map[string]any{"k": v}), ns)
	}
	e.sync([]*unstructured.Unstructured{namespace(ns), cm("1")})

	e.opts.ImpersonateTenants = true
	e = newEnvSame(t, e)
	plan := e.plan(append(tenantNamespace(ns), cm("2")))
	c := find(plan, "ConfigMap", "settings")
	if c.Action != reconciler.ActionUpdate || !strings.Contains(c.Reason, "tenant's identity is written by this sync") ||
		len(c.Diff) != 1 || c.Diff[0].Path != "data.k" {
		t.Fatalf("ConfigMap: %s %q %+v\n%s", c.Action, c.Reason, c.Diff, failures(plan))
	}
	if _, err := e.apply(plan); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, "settings", metav1.GetOptions{}); got.Data["k"] != "2" {
		t.Fatalf("not applied: %v", got.Data)
	}
}
