package detector

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
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
	for deadline := time.Now().Add(20 * time.Second); !isMember(w, gk, ns, "ours-later"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the metadata watch does not hold ours-later")
		}
	}
	for name, want := range map[string]bool{"ours": true, "ours-later": true, "by-hand": false, "other-inventory": false, "absent": false} {
		if got := isMember(w, gk, ns, name); got != want {
			t.Errorf("member(%s) = %v, want %v", name, got, want)
		}
	}
	if isMember(w, schema.GroupKind{Group: "apps", Kind: "Deployment"}, ns, "ours") {
		t.Error("member of another kind")
	}
}

// countingTransport counts the requests of a method whose path ends with suffix.
type countingTransport struct {
	rt             http.RoundTripper
	method, suffix string
	n              atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == c.method && strings.HasSuffix(r.URL.Path, c.suffix) {
		c.n.Add(1)
	}
	return c.rt.RoundTrip(r)
}

// TestLabelledWorkloadsAreReadOnce: a workload that carries gpuctl's labels and that Git does
// not declare is read (a GET) by every full pass's evaluation, unless the metadata watches'
// resourceVersion of it is the one of the last read. A team that labels thousands of its own
// Jobs so makes no request per Job per pass.
func TestLabelledWorkloadsAreReadOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := rest.CopyConfig(testcluster.Current().RESTConfig())
	gets := &countingTransport{method: http.MethodGet, suffix: "/jobs/labelled"}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { gets.rt = rt; return gets })
	kube := kubernetes.NewForConfigOrDie(cfg)
	ns := "labelled-read-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "labelled", Namespace: ns,
		Labels: map[string]string{keys.ApplySetPartOf: "applyset-x-v1", keys.ManagedBy: keys.ManagedByValue}},
		Spec: batchv1.JobSpec{Suspend: new(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	if _, err := kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := &Detector{opts: Options{Kube: kube}}
	d.w = &watches{d: d}
	read := func(version string) (any, error) { return d.readLabelled(ctx, "Job", ns, "labelled", version) }
	for range 3 {
		obj, err := read("7")
		if err != nil {
			t.Fatal(err)
		}
		if m, err := metaOf(obj); err != nil || m.GetLabels()[keys.ManagedBy] != keys.ManagedByValue {
			t.Fatalf("read %v (%v), want the Job with gpuctl's labels", obj, err)
		}
	}
	if n := gets.n.Load(); n != 1 {
		t.Errorf("three evaluations at one resourceVersion sent %d GETs, want 1", n)
	}
	if _, err := read("8"); err != nil || gets.n.Load() != 2 {
		t.Errorf("at a new resourceVersion: %v, %d GETs in all, want 2", err, gets.n.Load())
	}
	direct := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig()) // not counted
	if err := direct.BatchV1().Jobs(ns).Delete(ctx, "labelled", metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := direct.BatchV1().Jobs(ns).Get(ctx, "labelled", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("the Job is still there: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := read("9"); !apierrors.IsNotFound(err) {
		t.Fatalf("after its deletion: %v, want not found", err)
	}
	if _, err := read("9"); !apierrors.IsNotFound(err) || gets.n.Load() != 4 {
		t.Errorf("a failed read is remembered: %v, %d GETs in all, want 4", err, gets.n.Load())
	}
}

// isMember reports whether the metadata watches hold an object of gk namespace/name.
func isMember(w *watches, gk schema.GroupKind, ns, name string) bool {
	_, ok := w.memberVersion(gk, ns, name)
	return ok
}

// TestForgedOwnerIsNotManaged: a team writes the owner references of its own workloads. Only
// a reference to a member of the metadata watches, in the workload's namespace (or a
// cluster-scoped one), of its kind and with its UID makes the workload gpuctl's; a reference
// that borrows a member's name and UID from another namespace, another kind, or another UID,
// or that no API version parses, does not. (The API server's garbage collector deletes such
// workloads, but only after the detector may have judged them.)
func TestForgedOwnerIsNotManaged(t *testing.T) {
	cron := schema.GroupKind{Group: "batch", Kind: "CronJob"}
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &member{}, 0, cache.Indexers{})
	for _, m := range []reconciler.Member{{Namespace: "team-a", Name: "nightly", UID: "uid-a"}, {Name: "cluster-wide", UID: "uid-c"}} {
		if err := inf.GetStore().Add(&member{m}); err != nil {
			t.Fatal(err)
		}
	}
	w := &watches{meta: map[schema.GroupVersionResource]*metaWatch{{Group: "batch", Version: "v1", Resource: "cronjobs"}: {informer: inf, gk: cron}}}
	ref := func(apiVersion, kind, name, uid string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}
	}
	for _, c := range []struct {
		what  string
		ns    string
		owner *metav1.OwnerReference
		want  bool
	}{
		{"the member, in its namespace", "team-a", ref("batch/v1", "CronJob", "nightly", "uid-a"), true},
		{"another version of its group", "team-a", ref("batch/v1beta1", "CronJob", "nightly", "uid-a"), true},
		{"a cluster-scoped member", "team-b", ref("batch/v1", "CronJob", "cluster-wide", "uid-c"), true},
		{"its name and UID from another namespace", "team-b", ref("batch/v1", "CronJob", "nightly", "uid-a"), false},
		{"another UID", "team-a", ref("batch/v1", "CronJob", "nightly", "uid-b"), false},
		{"another kind", "team-a", ref("batch/v1", "Job", "nightly", "uid-a"), false},
		{"another group", "team-a", ref("evil.example/v1", "CronJob", "nightly", "uid-a"), false},
		{"an API version that does not parse", "team-a", ref("a/b/c", "CronJob", "nightly", "uid-a"), false},
	} {
		if got := w.managedOwner(c.ns, c.owner); got != c.want {
			t.Errorf("%s: managed %v, want %v", c.what, got, c.want)
		}
	}
}
