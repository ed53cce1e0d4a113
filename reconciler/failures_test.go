package reconciler_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestOneObjectNeverStopsEveryone (finding 9): a kind the cluster does not serve, a failed
// dry-run, a Namespace gpuctl did not create and a tenant identity it did not create each fail
// their own change (and the objects that depend on them: not those of an existing Namespace); everything else is applied, and a
// failed object is never pruned.
func TestOneObjectNeverStopsEveryone(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	createNamespace(e, "taken")    // declared below, but not created by gpuctl
	createNamespace(e, "tenant-f") // its RoleBinding gpuctl-tenant was not created by gpuctl
	_, err := e.kube.RbacV1().RoleBindings("tenant-f").Create(e.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: keys.TenantServiceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: keys.TenantClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: keys.TenantServiceAccount, Namespace: "tenant-f"}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	objs := func(key string) []*unstructured.Unstructured {
		return append([]*unstructured.Unstructured{
			namespace("solo"),
			configMap("solo", "fine", map[string]any{"k": "v"}),
			configMap("solo", "later", map[string]any{key: "v"}),
			object("example.com/v1", "Widget", "solo", "w", map[string]any{"spec": map[string]any{}}),
			namespace("taken"),
			configMap("taken", "inside", map[string]any{"k": "v"}),
			asTenant(configMap("tenant-f", "app", map[string]any{"k": "v"}), "tenant-f"),
		}, tenantIdentity("tenant-f")...)
	}
	plan := e.plan(objs("k"))
	want := map[string]string{
		"Widget solo/w":                      "example.com/v1, Kind=Widget: the cluster does not serve this kind",
		"Namespace taken":                    notCreatedByGpuctl,
		"RoleBinding tenant-f/gpuctl-tenant": notCreatedByGpuctl,
		"ConfigMap tenant-f/app":             "not applied: the tenant's identity RoleBinding tenant-f/gpuctl-tenant failed",
	}
	checkFailures(t, plan, want)
	if !strings.Contains(plan.Summary(), "4 failed") {
		t.Errorf("summary %q", plan.Summary())
	}
	js, _ := json.Marshal(find(plan, "Widget", "w"))
	if !strings.Contains(string(js), `"action":"skipped","error":"example.com/v1, Kind=Widget: the cluster does not serve this kind`) {
		t.Errorf("JSON of a failed change: %s", js)
	}
	cs, err := e.apply(plan)
	if err == nil || len(cs.Failed()) != 4 || cs.WriteFailed() {
		t.Fatalf("apply: %d failed (write failed %v): %v", len(cs.Failed()), cs.WriteFailed(), err)
	}
	for _, name := range []string{"fine", "later"} {
		if _, err := e.kube.CoreV1().ConfigMaps("solo").Get(e.ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap solo/%s not applied: %v", name, err)
		}
	}
	// the Namespace exists (only not adopted): what is declared in it is applied
	if _, err := e.kube.CoreV1().ConfigMaps("taken").Get(e.ctx, "inside", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap taken/inside not applied: %v", err)
	}
	for ns, name := range map[string]string{"tenant-f": "app"} {
		if _, err := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s/%s depends on a failed object but exists: %v", ns, name, err)
		}
	}

	// a dry-run that fails (an invalid data key) fails that object only, and it is not pruned
	e.opts.MaxPrune = 1
	e = newEnvSame(t, e)
	plan = e.plan(objs("bad key!"))
	want["ConfigMap solo/later"] = "dry-run apply: ConfigMap \"later\" is invalid"
	checkFailures(t, plan, want)
	if n := plan.Count(reconciler.ActionDelete); n != 0 {
		t.Fatalf("a failed object is planned for pruning:\n%s", actions(plan))
	}
	if _, err := e.apply(plan); err == nil {
		t.Fatal("apply of a plan with failures returned no error")
	}
	if cm, err := e.kube.CoreV1().ConfigMaps("solo").Get(e.ctx, "later", metav1.GetOptions{}); err != nil || cm.Data["k"] != "v" {
		t.Fatalf("ConfigMap solo/later changed or gone: %v", err)
	}
}

// checkFailures asserts the failed changes of a plan: object → start of its error.
func checkFailures(t *testing.T, plan *reconciler.Plan, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, c := range plan.Failed() {
		got[c.Object.String()] = c.Error
		if c.Action != reconciler.ActionSkipped {
			t.Errorf("%s failed with action %s, want skipped", c.Object, c.Action)
		}
	}
	for obj, prefix := range want {
		if !strings.HasPrefix(got[obj], prefix) {
			t.Errorf("%s: error %q, want one starting %q", obj, got[obj], prefix)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d failures, want %d:\n%s", len(got), len(want), failures(plan))
	}
}
