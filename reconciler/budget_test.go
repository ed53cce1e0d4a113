package reconciler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/reconciler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// members builds n objects of a kind in a namespace: ConfigMaps, Services, ServiceAccounts or
// Roles (each kind in its own apply stage).
func members(kind, ns, prefix string, n int) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		switch kind {
		case "ConfigMap":
			out = append(out, configMap(ns, name, map[string]any{"k": "v"}))
		case "Service":
			out = append(out, object("v1", "Service", ns, name, map[string]any{"spec": map[string]any{
				"selector": map[string]any{"app": name}, "ports": []any{map[string]any{"port": int64(80)}}}}))
		case "ServiceAccount":
			out = append(out, object("v1", "ServiceAccount", ns, name, nil))
		case "Role":
			out = append(out, object("rbac.authorization.k8s.io/v1", "Role", ns, name, map[string]any{"rules": []any{}}))
		}
	}
	return out
}

// TestPruneBudgetEdges: the prune budget counts every member of the
// inventory, whatever the kinds and their order after sorting: at the budget and one under are
// allowed, one over is refused with the right count. The case: 42 members, 9 removed
// (21 %) was refused as "9 of 34" because the count read a slice that the sort had reordered.
func TestPruneBudgetEdges(t *testing.T) {
	type kindCount struct {
		kind string
		n    int
	}
	type testCase struct {
		keep, remove []kindCount
		refused      string // "" when allowed
	}
	// name: members (the Namespace is one), removed, where the budget (25 %) stands
	cases := map[string]testCase{
		"issue-42-remove-9": {
			keep:   []kindCount{{"ServiceAccount", 3}, {"Role", 4}, {"Service", 25}},
			remove: []kindCount{{"ConfigMap", 9}}},
		"42-remove-10-under": {
			keep:   []kindCount{{"Service", 20}, {"Role", 11}},
			remove: []kindCount{{"ConfigMap", 6}, {"ServiceAccount", 4}}},
		"42-remove-11-over": {
			keep:    []kindCount{{"Service", 20}, {"Role", 10}},
			remove:  []kindCount{{"ConfigMap", 11}},
			refused: "11 of 42 inventory objects would be pruned"},
		"40-remove-10-at": {
			keep:   []kindCount{{"Service", 29}},
			remove: []kindCount{{"ConfigMap", 5}, {"ServiceAccount", 5}}},
		"40-remove-9-under": {
			keep:   []kindCount{{"Role", 10}, {"Service", 20}},
			remove: []kindCount{{"ConfigMap", 9}}},
		"40-remove-11-over": {
			keep:    []kindCount{{"ServiceAccount", 4}, {"Service", 24}},
			remove:  []kindCount{{"ConfigMap", 6}, {"Role", 5}},
			refused: "11 of 40 inventory objects would be pruned"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, reconciler.DefaultOptions())
			ns := "budget-" + name
			build := func(kcs []kindCount) []*unstructured.Unstructured {
				var out []*unstructured.Unstructured
				for _, kc := range kcs {
					out = append(out, members(kc.kind, ns, strings.ToLower(kc.kind), kc.n)...)
				}
				return out
			}
			all := append([]*unstructured.Unstructured{namespace(ns)}, append(build(tc.keep), build(tc.remove)...)...)
			e.sync(all)
			kept := append([]*unstructured.Unstructured{namespace(ns)}, build(tc.keep)...)
			plan := e.plan(kept)
			removed := 0
			for _, kc := range tc.remove {
				removed += kc.n
			}
			if n := plan.Count(reconciler.ActionDelete); n != removed {
				t.Fatalf("%d deletes planned, want %d:\n%s", n, removed, actions(plan))
			}
			switch {
			case tc.refused == "" && plan.Refused != nil:
				t.Fatalf("refused: %v", plan.Refused)
			case tc.refused != "" && (plan.Refused == nil || !strings.Contains(plan.Refused.Error(), tc.refused)):
				t.Fatalf("refusal %v, want one saying %q", plan.Refused, tc.refused)
			case tc.refused != "":
				return
			}
			if _, err := e.apply(plan); err != nil {
				t.Fatalf("apply: %v", err)
			}
			cms, err := e.kube.CoreV1().ConfigMaps(ns).List(e.ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cm := range cms.Items {
				if strings.HasPrefix(cm.Name, "configmap-") {
					t.Errorf("ConfigMap %s not pruned", cm.Name)
				}
			}
		})
	}
}
