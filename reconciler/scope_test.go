package reconciler_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// scopeRepo is a repository of two teams and two pool files.
func scopeRepo() map[string]string {
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {k: v}\n"
	}
	pool := func(name, node string) string {
		return "kind: pool\nversion: v0.1\nmetadata: {name: " + name + "}\nnodes:\n  " + node + ": {}\n"
	}
	return map[string]string{
		".gpuctl.yaml":           "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"quotas/q.yaml":          "kind: quota\nversion: v0.1\nmetadata: {name: team}\nusers:\n  scope-a: {gpu: 2}\n  scope-b: {gpu: 2}\n",
		"teams/scope-a/one.yaml": cm("one"),
		"teams/scope-a/two.yaml": cm("two"),
		"teams/scope-b/b.yaml":   cm("b"),
		"pools/a/pool.yaml":      pool("scope-pa", "gpu-a100-0"),
		"pools/b/pool.yaml":      pool("scope-pb", "gpu-a100-1"),
	}
}

// renderDir renders the directory dir of a repository written into memory (its .gpuctl.yaml
// found upwards, as the CLI finds it).
func renderDir(t *testing.T, files map[string]string, dir string) []*unstructured.Unstructured {
	t.Helper()
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	res, err := render.New(render.Options{}).Render(fs, "/repo/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	return res.Objects
}

// TestScopedPlan: a plan of teams/scope-a (Options.Scope) plans what the
// directory declares and takes away only what it declared: none of scope-b's objects, no
// Namespace or quota, no identity or PriorityClass, no node label; removing a file prunes
// exactly its objects, and the inventory keeps naming the kinds declared elsewhere. A scope
// of a pool directory relabels only the nodes of its pools, also once its file is gone.
func TestScopedPlan(t *testing.T) {
	opts := reconciler.DefaultOptions()
	opts.FieldManager, opts.MaxPrune = "gpuctl-scope-test", 1 // node labels of this test only
	full := newEnv(t, opts)
	files := scopeRepo()
	full.sync(renderDir(t, files, ""))
	t.Cleanup(func() { // the nodes lose this test's labels
		delete(files, "pools/a/pool.yaml")
		delete(files, "pools/b/pool.yaml")
		full.sync(renderDir(t, files, ""))
	})
	scoped := func(dir string) *env {
		o := opts
		o.Scope, o.AllowEmpty = []string{dir}, dir == "pools/a/"
		return newEnv(t, o)
	}

	alice := scoped("teams/scope-a/")
	plan := alice.plan(renderDir(t, files, "teams/scope-a"))
	if plan.HasChanges() {
		t.Fatalf("a scoped plan of a synced directory has changes:\n%s", actions(plan))
	}
	if want := "scoped to teams/scope-a/: objects declared elsewhere are not pruned"; len(plan.Notes) != 1 || !strings.HasPrefix(plan.Notes[0], want) {
		t.Errorf("notes %q, want one starting %q", plan.Notes, want)
	}
	for _, kind := range []string{"PriorityClass", "ServiceAccount", "RoleBinding"} {
		for _, c := range plan.Changes {
			if c.Object.Kind == kind && c.Action != reconciler.ActionUnchanged {
				t.Errorf("%s: %s, want unchanged", c.Object, c.Action)
			}
		}
	}

	delete(files, "teams/scope-a/one.yaml")
	plan, _ = alice.sync(renderDir(t, files, "teams/scope-a"))
	// the admission binding, declared by .gpuctl.yaml, lists the tenants of the whole
	// repository: a path's render knows only its own, so a scoped plan leaves it alone
	const keptBinding = "skipped ValidatingAdmissionPolicyBinding gpuctl-tenant-pod-policy\n"
	if got := actions(plan); got != keptBinding+"delete ConfigMap scope-a/one" {
		t.Fatalf("scoped sync after removing a file:\n%s\nwant only: delete ConfigMap scope-a/one", got)
	}
	if c := find(plan, "ValidatingAdmissionPolicyBinding", "gpuctl-tenant-pod-policy"); c.Reason != "declared outside the scope (.gpuctl.yaml): a plan of the whole repository updates it" {
		t.Errorf("the binding's reason: %q", c.Reason)
	}
	for ns, name := range map[string]string{"scope-a": "two", "scope-b": "b"} {
		if _, err := alice.kube.CoreV1().ConfigMaps(ns).Get(alice.ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s/%s: %v", ns, name, err)
		}
	}
	inv, err := alice.kube.CoreV1().ConfigMaps(keys.SystemNamespace).Get(alice.ctx, alice.opts.InventoryName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gks := inv.Annotations[keys.ApplySetGroupKinds]; !strings.Contains(gks, "ResourceQuota") || !strings.Contains(gks, "Namespace") {
		t.Errorf("a scoped sync narrowed the inventory to its own kinds: %s", gks)
	}
	if plan := full.plan(renderDir(t, files, "")); plan.HasChanges() {
		t.Errorf("the whole repository after the scoped sync has changes:\n%s", actions(plan))
	}

	// pools/a: its node moves to gpu-t4-0; gpu-a100-1 (pool scope-pb) keeps its label
	pools := scoped("pools/a/")
	files["pools/a/pool.yaml"] = strings.Replace(files["pools/a/pool.yaml"], "gpu-a100-0", "gpu-t4-0", 1)
	plan, _ = pools.sync(renderDir(t, files, "pools/a"))
	if got, want := sortedLines(actions(plan)), "update ConfigMap "+keys.SystemNamespace+"/"+keys.PoolRegistryPrefix+"scope-pa\nupdate Node gpu-a100-0\nupdate Node gpu-t4-0"; got != want {
		t.Fatalf("scoped sync of a pool:\n%s\nwant:\n%s", got, want)
	}
	// the pool file goes (pools/a renders nothing: allowed), its registry ConfigMap names the
	// pool, whose node loses its label
	delete(files, "pools/a/pool.yaml")
	files["pools/a/README.yaml"] = "# nothing here\n"
	plan, _ = pools.sync(renderDir(t, files, "pools/a"))
	if got, want := sortedLines(actions(plan)), "delete ConfigMap "+keys.SystemNamespace+"/"+keys.PoolRegistryPrefix+"scope-pa\nupdate Node gpu-t4-0"; got != want {
		t.Fatalf("scoped sync of a removed pool:\n%s\nwant:\n%s", got, want)
	}
	for node, pool := range map[string]string{"gpu-a100-0": "", "gpu-t4-0": "", "gpu-a100-1": "scope-pb"} {
		n, err := pools.kube.CoreV1().Nodes().Get(pools.ctx, node, metav1.GetOptions{})
		if err != nil || n.Labels[keys.Pool] != pool {
			t.Errorf("node %s: pool label %q, want %q (%v)", node, n.Labels[keys.Pool], pool, err)
		}
	}
	if _, err := pools.kube.CoreV1().ConfigMaps("scope-b").Get(pools.ctx, "b", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Error("a scoped sync of pools/a pruned a team's object")
	}
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
