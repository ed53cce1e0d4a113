package detector

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// TestShadowWatchesLeaveOutOurs: the shadow watches (the workloads that may request GPUs) hold
// no Job that carries the engine's inventory label and gpuctl's, as the engine applies them —
// the metadata watches hold those — but every other Job: unlabelled, labelled by another
// inventory (another gpuctl), or with the inventory's label forged alone (the engine never
// prunes it: it may be a shadow). member tells the inventory's members from the others.
func TestShadowWatchesLeaveOutOurs(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := testcluster.Current().RESTConfig()
	kube := kubernetes.NewForConfigOrDie(cfg)
	ns := "shadow-watch-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eopts := reconciler.DefaultOptions()
	eopts.Namespace = "sys-" + ns
	engine, err := reconciler.NewManager(cfg, eopts)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Config: cfg, Kube: kube, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	gpu := corev1.ResourceList{keys.ResourceGPU: resource.MustParse("1")}
	job := func(name string, labels ...string) { // key, value, ...
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}},
			Spec: batchv1.JobSpec{Suspend: new(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Limits: gpu, Requests: gpu}}}}}}}
		for i := 0; i+1 < len(labels); i += 2 {
			j.Labels[labels[i]] = labels[i+1]
		}
		if _, err := kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ours := []string{keys.ApplySetPartOf, engine.InventoryID(), keys.ManagedBy, keys.ManagedByValue} // as the engine applies
	job("ours", ours...)
	job("by-hand")
	job("other-inventory", keys.ApplySetPartOf, "applyset-another-v1", keys.ManagedBy, keys.ManagedByValue)
	job("forged", keys.ApplySetPartOf, engine.InventoryID()) // not gpuctl's: never pruned, so a possible shadow
	w, err := d.startWatches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d.w = w
	mw := w.startMeta(ctx, schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, schema.GroupKind{Group: "batch", Kind: "Job"}, engine.InventoryID())
	w.mu.Lock()
	w.meta[schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}] = mw
	w.mu.Unlock()
	job("ours-later", ours...) // a watch event, not the first list
	job("by-hand-later")
	job("forged-later", keys.ApplySetPartOf, engine.InventoryID())
	names := func() []string {
		var out []string
		for _, inf := range w.workloads["Job"] {
			for _, obj := range inf.GetStore().List() {
				if m, err := metaOf(obj); err == nil && m.GetNamespace() == ns {
					out = append(out, m.GetName())
				}
			}
		}
		slices.Sort(out)
		return out
	}
	want := []string{"by-hand", "by-hand-later", "forged", "forged-later", "other-inventory"}
	for deadline := time.Now().Add(20 * time.Second); !slices.Equal(names(), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the shadow watch of Jobs holds %v, want %v", names(), want)
		}
	}
	gk := schema.GroupKind{Group: "batch", Kind: "Job"}
	for deadline := time.Now().Add(20 * time.Second); !w.member(gk, ns, "ours-later"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the metadata watch does not hold ours-later")
		}
	}
	for name, want := range map[string]bool{"ours": true, "ours-later": true, "by-hand": false, "other-inventory": false, "absent": false} {
		if got := w.member(gk, ns, name); got != want {
			t.Errorf("member(%s) = %v, want %v", name, got, want)
		}
	}
	if w.member(schema.GroupKind{Group: "apps", Kind: "Deployment"}, ns, "ours") {
		t.Error("member of another kind")
	}
}
