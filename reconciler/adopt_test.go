package reconciler_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
)

const notCreatedByGpuctl = "exists and was not created by gpuctl; an admin can annotate the live object g8s.host/adopt=true to let gpuctl take it over"

// TestNeverAdopt (finding 8): a platform's LimitRange in a team's namespace, declared
// identically in a file, is not taken over: the change fails, the live object is untouched and
// is never pruned; the rest of the sync is applied. With the admin's adopt annotation it is
// taken over (without force: the declaration matches the live list, so no field conflicts).
func TestNeverAdopt(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "adopt-team"
	createNamespace(e, ns)
	platform := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: ns},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
	live, err := e.kube.CoreV1().LimitRanges(ns).Create(e.ctx, platform, metav1.CreateOptions{FieldManager: "platform"})
	if err != nil {
		t.Fatal(err)
	}
	declared := func() *unstructured.Unstructured {
		u := object("v1", "LimitRange", ns, "limits", map[string]any{"spec": map[string]any{"limits": []any{
			map[string]any{"type": "Container", "max": map[string]any{"cpu": "8"}, "default": map[string]any{"cpu": "1"},
				"defaultRequest": map[string]any{"cpu": "1"}}}}})
		u.SetAnnotations(map[string]string{keys.Source: "teams/adopt-team/limits.yaml"})
		return u
	}
	other := func() *unstructured.Unstructured { return configMap(ns, "other", map[string]any{"k": "v"}) }

	plan := e.plan([]*unstructured.Unstructured{declared(), other()})
	c := find(plan, "LimitRange", "limits")
	if want := notCreatedByGpuctl + " (declared in teams/adopt-team/limits.yaml)"; c.Action != reconciler.ActionSkipped || c.Error != want {
		t.Fatalf("LimitRange: %s %q, want skipped %q", c.Action, c.Error, want)
	}
	cs, err := e.apply(plan)
	if err == nil || len(cs.Failed()) != 1 || result(cs, "ConfigMap", "other").Error != "" {
		t.Fatalf("apply: %v", err)
	}
	assertUntouched(t, e, live)

	// the file goes: the platform's object is not pruned
	e.opts.MaxPrune = 1
	e = newEnvSame(t, e)
	plan, _ = e.sync([]*unstructured.Unstructured{other()})
	if got := actions(plan); got != "" {
		t.Fatalf("sync without the file plans:\n%s", got)
	}
	assertUntouched(t, e, live)

	// the admin marks it adoptable: gpuctl takes it over
	patch := `{"metadata":{"annotations":{"` + keys.Adopt + `":"` + keys.AdoptAllowed + `"}}}`
	if _, err := e.kube.CoreV1().LimitRanges(ns).Patch(e.ctx, "limits", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	plan, _ = e.sync([]*unstructured.Unstructured{declared(), other()})
	if got := actions(plan); got != "update LimitRange adopt-team/limits" {
		t.Fatalf("adoption:\n%s", got)
	}
	lr, _ := e.kube.CoreV1().LimitRanges(ns).Get(e.ctx, "limits", metav1.GetOptions{})
	if lr.Labels[keys.ApplySetPartOf] == "" || lr.Labels[keys.ManagedBy] != keys.ManagedByValue {
		t.Fatalf("adopted object not labelled: %v", lr.Labels)
	}
}

func assertUntouched(t *testing.T, e *env, live *corev1.LimitRange) {
	t.Helper()
	now, err := e.kube.CoreV1().LimitRanges(live.Namespace).Get(e.ctx, live.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the platform's object is gone: %v", err)
	}
	if now.ResourceVersion != live.ResourceVersion {
		t.Fatalf("the platform's object was written: resourceVersion %s, was %s; labels %v", now.ResourceVersion, live.ResourceVersion, now.Labels)
	}
}

// TestNeverForceWhatGpuctlDidNotCreate: with Force (correct mode, --force-conflicts), an
// adoptable object that another manager owns is applied without force: the conflict is
// reported and the other manager's value stays — in a sync and in a drift correction.
func TestNeverForceWhatGpuctlDidNotCreate(t *testing.T) {
	ns := "force-team"
	e := forcingEnv(t, ns)
	platform := applycorev1.ConfigMap("platform", ns).WithData(map[string]string{"k": "platform"}).
		WithAnnotations(map[string]string{keys.Adopt: keys.AdoptAllowed})
	if _, err := e.kube.CoreV1().ConfigMaps(ns).Apply(e.ctx, platform, metav1.ApplyOptions{FieldManager: "platform"}); err != nil {
		t.Fatal(err)
	}
	declared := func() *unstructured.Unstructured { return configMap(ns, "platform", map[string]any{"k": "team"}) }
	plan := e.plan([]*unstructured.Unstructured{declared()})
	c := find(plan, "ConfigMap", "platform")
	if len(c.Conflicts) != 1 || c.Conflicts[0].Manager != "platform" || !strings.Contains(c.Reason, "only on objects it created") {
		t.Fatalf("conflicts %+v, reason %q", c.Conflicts, c.Reason)
	}
	if _, err := e.apply(plan); err == nil || !strings.Contains(err.Error(), `.data.k is owned by "platform" (gpuctl forces fields only on objects it created)`) {
		t.Fatalf("apply: %v", err)
	}
	assertData(t, e, ns, "platform", "platform")

	// the drift correction path: forced apply asked for, not granted
	u := declared()
	u.SetLabels(map[string]string{keys.ManagedBy: keys.ManagedByValue})
	if err := e.manager.ApplyOne(e.ctx, u, true); err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("ApplyOne with force on an object gpuctl did not create: %v", err)
	}
	assertData(t, e, ns, "platform", "platform")

	// and an object not marked adoptable is refused outright
	if _, err := e.kube.CoreV1().ConfigMaps(ns).Apply(e.ctx, applycorev1.ConfigMap("private", ns).WithData(map[string]string{"k": "platform"}),
		metav1.ApplyOptions{FieldManager: "platform"}); err != nil {
		t.Fatal(err)
	}
	if err := e.manager.ApplyOne(e.ctx, configMap(ns, "private", map[string]any{"k": "team"}), true); !errors.Is(err, reconciler.ErrNotCreatedByGpuctl) {
		t.Fatalf("ApplyOne on an object gpuctl did not create: %v", err)
	}
	assertData(t, e, ns, "private", "platform")
}

func assertData(t *testing.T, e *env, ns, name, want string) {
	t.Helper()
	cm, err := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil || cm.Data["k"] != want {
		t.Fatalf("ConfigMap %s/%s: %v, data %v, want k=%s", ns, name, err, cm.Data, want)
	}
}

// TestExistingNamespaceNotAdoptedKeepsItsObjects: a platform's Namespace that a quota file
// also declares is not taken over, but it exists, so what the files put in it is applied.
func TestExistingNamespaceNotAdoptedKeepsItsObjects(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "adopt-platform-ns"
	createNamespace(e, ns)
	plan := e.plan([]*unstructured.Unstructured{namespace(ns), configMap(ns, "inside", map[string]any{"k": "v"})})
	if c := find(plan, "Namespace", ns); c.Action != reconciler.ActionSkipped || !strings.HasPrefix(c.Error, notCreatedByGpuctl) {
		t.Fatalf("Namespace: %s %q, want the adoption error", c.Action, c.Error)
	}
	if c := find(plan, "ConfigMap", "inside"); c.Action != reconciler.ActionCreate || c.Error != "" {
		t.Fatalf("ConfigMap in the existing namespace: %s %q, want create", c.Action, c.Error)
	}
	cs, _ := e.apply(plan)
	if r := result(cs, "ConfigMap", "inside"); r.Error != "" {
		t.Fatalf("ConfigMap not applied: %s", r.Error)
	}
	if _, err := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, "inside", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := e.kube.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{})
	if err != nil || got.Labels[keys.ManagedBy] != "" {
		t.Fatalf("the platform's namespace was taken over: %v %v", got.Labels, err)
	}
}
