package reconciler_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
)

// kubectlApplySetID is the id kubectl computes for a ConfigMap parent (KEP-3659).
func kubectlApplySetID(name, namespace string) string {
	sum := sha256.Sum256([]byte(name + "." + namespace + ".ConfigMap."))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

// writeParent creates the inventory's parent ConfigMap as `kubectl apply --applyset` does
// (server-side apply by field manager kubectl, tooling kubectl/v1.37.1) or as another gpuctl
// version does (field manager gpuctl), with the given id.
func writeParent(t *testing.T, e *env, manager, id, tooling string) *corev1.ConfigMap {
	t.Helper()
	createNamespace(e, keys.SystemNamespace)
	cm := applycorev1.ConfigMap(e.opts.InventoryName, keys.SystemNamespace).
		WithLabels(map[string]string{keys.ApplySetID: id}).
		WithAnnotations(map[string]string{keys.ApplySetTooling: tooling, keys.ApplySetGroupKinds: "ConfigMap"})
	live, err := e.kube.CoreV1().ConfigMaps(keys.SystemNamespace).Apply(e.ctx, cm, metav1.ApplyOptions{FieldManager: manager, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.kube.CoreV1().ConfigMaps(keys.SystemNamespace).Delete(e.ctx, e.opts.InventoryName, metav1.DeleteOptions{})
	})
	return live
}

// TestForeignApplySetRefused: a parent that kubectl's ApplySet manages
// (same id, tooling kubectl/v1.37.1), one with another id and a plain ConfigMap are refused
// before anything is written, naming the parent and its tooling; another gpuctl version's
// parent is gpuctl's.
func TestForeignApplySetRefused(t *testing.T) {
	type testCase struct {
		manager, id, tooling string
		refused              string // "" when gpuctl may use the parent
	}
	cases := map[string]testCase{
		"kubectl-applyset": {manager: "kubectl", tooling: "kubectl/v1.37.1",
			refused: "is the ApplySet parent of another tool (applyset.kubernetes.io/tooling: kubectl/v1.37.1)"},
		"wrong-id": {manager: keys.FieldManager, id: "applyset-not-this-one-v1", tooling: reconciler.Tooling,
			refused: `label is "applyset-not-this-one-v1"`},
		"gpuctl-version": {manager: keys.FieldManager, tooling: "gpuctl/v9.9.9"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, reconciler.DefaultOptions())
			ns := "applyset-" + name
			id := tc.id
			if id == "" {
				id = kubectlApplySetID(e.opts.InventoryName, keys.SystemNamespace)
			}
			parent := writeParent(t, e, tc.manager, id, tc.tooling)
			e.resetCounts()
			objs := []*unstructured.Unstructured{namespace(ns), configMap(ns, "app", map[string]any{"k": "v"})}
			plan, err := e.manager.Plan(e.ctx, objs)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("another gpuctl version's parent: %v", err)
				}
				if _, err := e.apply(plan); err != nil {
					t.Fatalf("apply: %v", err)
				}
				return
			}
			want := "ConfigMap " + keys.SystemNamespace + "/" + e.opts.InventoryName + " is not gpuctl's inventory"
			if !errors.Is(err, reconciler.ErrForeignInventory) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("plan: %v, want an error saying %q and %q", err, want, tc.refused)
			}
			if w := e.count.writes.Load() + e.count.dryRuns.Load(); w != 0 {
				t.Errorf("a refused sync sent %d writes and dry-runs", w)
			}
			now, err := e.kube.CoreV1().ConfigMaps(keys.SystemNamespace).Get(e.ctx, e.opts.InventoryName, metav1.GetOptions{})
			if err != nil || now.ResourceVersion != parent.ResourceVersion {
				t.Errorf("the other tool's parent was written: %v", err)
			}
			if _, err := e.kube.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a refused sync created Namespace %s: %v", ns, err)
			}
		})
	}
}

// TestInventoryParentNotForced: a parent that kubectl's ApplySet creates between gpuctl's plan
// and its apply is not taken over: the parent is written without force, so the conflict on
// its tooling fails the sync, and nothing else is written.
func TestInventoryParentNotForced(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "applyset-race"
	plan := e.plan([]*unstructured.Unstructured{namespace(ns), configMap(ns, "app", map[string]any{"k": "v"})})
	parent := writeParent(t, e, "kubectl", kubectlApplySetID(e.opts.InventoryName, keys.SystemNamespace), "kubectl/v1.37.1")
	cs, err := e.manager.Apply(e.ctx, plan, nil)
	if cs != nil || err == nil || !strings.Contains(err.Error(), "record inventory") || !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Fatalf("apply over kubectl's parent: %v", err)
	}
	now, err := e.kube.CoreV1().ConfigMaps(keys.SystemNamespace).Get(e.ctx, e.opts.InventoryName, metav1.GetOptions{})
	if err != nil || now.ResourceVersion != parent.ResourceVersion || now.Annotations[keys.ApplySetTooling] != "kubectl/v1.37.1" {
		t.Fatalf("kubectl's parent was taken over: %v %v", err, now.Annotations)
	}
	if _, err := e.kube.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Namespace %s created after the inventory failed: %v", ns, err)
	}
}
