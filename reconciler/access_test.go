package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/test/testcluster"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// teamMember creates the ServiceAccount dev in namespace ns, bound to the ClusterRole edit there
// only, and returns its credentials (a token from the TokenRequest API).
func teamMember(e *env, ns string) *rest.Config {
	e.t.Helper()
	if _, err := e.kube.CoreV1().ServiceAccounts(ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.kube.RbacV1().RoleBindings(ns).Create(e.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dev-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "dev", Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	tok, err := e.kube.CoreV1().ServiceAccounts(ns).CreateToken(e.ctx, "dev",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	admin := testcluster.Current().RESTConfig()
	return &rest.Config{Host: admin.Host, BearerToken: tok.Status.Token, TLSClientConfig: admin.TLSClientConfig}
}

// TestPlanWithTeamCredentials: with credentials that may only edit namespace
// scope-a, a plan (Options.LimitedCredentials) is made without the inventory: the team's edit
// is planned, a removed file's object is not shown as a prune (the notes say why), what these
// credentials may not read (the tenant's RoleBinding, nodes) is unchecked, not failed; Apply
// writes the edit, prunes nothing and leaves the inventory alone. Without the option the plan
// fails as before, and with admin credentials the same plan shows the prune.
func TestPlanWithTeamCredentials(t *testing.T) {
	opts := reconciler.DefaultOptions()
	opts.FieldManager, opts.MaxPrune = "gpuctl-scope-test", 1
	files := scopeRepo()
	delete(files, "pools/a/pool.yaml")
	delete(files, "pools/b/pool.yaml")
	admin := newEnv(t, opts)
	opts = admin.opts // its inventory
	admin.sync(renderDir(t, files, ""))
	dev := teamMember(admin, "scope-a")

	files["teams/scope-a/two.yaml"] = strings.Replace(files["teams/scope-a/two.yaml"], "k: v", "k: changed", 1)
	delete(files, "teams/scope-a/one.yaml")
	opts.Scope = []string{"teams/scope-a/"}
	m, err := reconciler.NewManager(dev, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Plan(admin.ctx, renderDir(t, files, "teams/scope-a")); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("without LimitedCredentials the plan did not fail on the inventory: %v", err)
	}
	opts.LimitedCredentials = true
	team := newEnv(t, opts)
	team.manager, _ = reconciler.NewManager(dev, opts)
	plan := team.plan(renderDir(t, files, "teams/scope-a"))
	if len(plan.Failed()) > 0 {
		t.Fatalf("failures with team credentials:\n%s", failures(plan))
	}
	if c := find(plan, "ConfigMap", "two"); c.Action != reconciler.ActionUpdate {
		t.Fatalf("the team's edit is not planned:\n%s", actions(plan))
	}
	if c := find(plan, "ConfigMap", "one"); c.Action != "" {
		t.Errorf("a plan without the inventory shows %s ConfigMap one", c.Action)
	}
	if c := find(plan, "RoleBinding", keys.TenantServiceAccount); c.Action != reconciler.ActionSkipped ||
		c.Reason != "not checked: these credentials may not list rolebindings" && c.Reason != "not checked: these credentials may not get rolebindings" {
		t.Errorf("the tenant's RoleBinding, which edit may not read: %+v", c)
	}
	notes := strings.Join(plan.Notes, "\n")
	for _, want := range []string{"scoped to teams/scope-a/",
		"the inventory " + keys.SystemNamespace + "/" + opts.InventoryName + " is not readable with these credentials: prunes are not shown",
		"objects not readable with these credentials, not checked (shown as skipped): 3"} { // RoleBinding, admission policy and binding {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	parent, err := admin.kube.CoreV1().ConfigMaps(keys.SystemNamespace).Get(admin.ctx, opts.InventoryName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := team.apply(plan); err != nil {
		t.Fatalf("apply with team credentials: %v", err)
	}
	if cm, err := admin.kube.CoreV1().ConfigMaps("scope-a").Get(admin.ctx, "two", metav1.GetOptions{}); err != nil || cm.Data["k"] != "changed" {
		t.Errorf("the team's edit was not applied: %v %v", cm.Data, err)
	}
	if _, err := admin.kube.CoreV1().ConfigMaps("scope-a").Get(admin.ctx, "one", metav1.GetOptions{}); err != nil {
		t.Errorf("a sync without the inventory pruned: %v", err)
	}
	after, _ := admin.kube.CoreV1().ConfigMaps(keys.SystemNamespace).Get(admin.ctx, opts.InventoryName, metav1.GetOptions{})
	if after.ResourceVersion != parent.ResourceVersion {
		t.Error("a sync without the inventory wrote the inventory")
	}

	// the whole repository with the team's credentials: nodes are not checked either
	opts.Scope = nil
	team.manager, _ = reconciler.NewManager(dev, opts)
	files["pools/b/pool.yaml"] = scopeRepo()["pools/b/pool.yaml"]
	plan = team.plan(renderDir(t, files, ""))
	if c := find(plan, "Node", "gpu-a100-1"); c.Reason != "not checked: these credentials may not list nodes" {
		t.Errorf("node intent with team credentials: %+v", c)
	}
	if !strings.Contains(strings.Join(plan.Notes, "\n"), "nodes are not readable with these credentials: pool labels are not checked") {
		t.Errorf("notes lack the nodes: %q", plan.Notes)
	}
	if len(plan.Failed()) > 0 {
		t.Errorf("failures with team credentials:\n%s", failures(plan))
	}

	// admin credentials: the same scoped plan shows the prune and checks the RoleBinding
	opts.Scope, opts.LimitedCredentials = []string{"teams/scope-a/"}, true
	delete(files, "pools/b/pool.yaml")
	admin.manager, _ = reconciler.NewManager(testcluster.Current().RESTConfig(), opts)
	plan = admin.plan(renderDir(t, files, "teams/scope-a"))
	if got := actions(plan); got != "skipped ValidatingAdmissionPolicyBinding gpuctl-tenant-pod-policy\ndelete ConfigMap scope-a/one" || len(plan.Notes) != 1 {
		t.Errorf("admin plan:\n%s\nnotes %q", got, plan.Notes)
	}
}
