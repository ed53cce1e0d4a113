package multinode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/testcluster"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The bar of issue 31: a 2-node training job rendered with multiNode jobset loses rank 1 (an
// eviction, as a preemption or a drain ends a pod) → both ranks restart together, rank 0 too,
// and the job then completes.
func TestMultiNodeJobRestartsWhole(t *testing.T) {
	// kwok keeps each attempt's ranks Running for 20 s, then they succeed.
	client, dyn, ns, first := startTwoRanks(t, "20s")
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: first[1].Name, Namespace: ns}}
	if err := client.PolicyV1().Evictions(ns).Evict(t.Context(), ev); err != nil {
		t.Fatalf("evict rank 1: %v", err)
	}
	lost := time.Now()
	second := waitRanksRunning(t, client, ns, sftSelector, 2, map[types.UID]bool{first[0].UID: true, first[1].UID: true})
	t.Logf("rank 1 evicted: both ranks run again %s later (rank 0 %s → %s, rank 1 %s → %s)",
		time.Since(lost).Round(100*time.Millisecond), first[0].Name, second[0].Name, first[1].Name, second[1].Name)
	for r, p := range second {
		if got := p.Annotations["jobset.sigs.k8s.io/restart-attempt"]; got != "1" {
			t.Errorf("rank %d (%s) is of restart %q, want 1", r, p.Name, got)
		}
	}
	poll(t, "JobSet sft to complete", func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(testcluster.JobSetResource).Namespace(ns).Get(ctx, "sft", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] == "True" && (m["type"] == "Completed" || m["type"] == "Failed") {
				if m["type"] == "Failed" {
					return false, fmt.Errorf("JobSet failed: %v: %v", m["reason"], m["message"])
				}
				return true, nil
			}
		}
		return false, nil
	})
	if restarts, _, _ := unstructured.NestedInt64(mustGet(t, dyn, ns, "sft").Object, "status", "restarts"); restarts != 1 {
		t.Errorf("JobSet restarts = %d, want 1", restarts)
	}
}

// sftSelector selects the pods of the JobSet sft.
const sftSelector = "jobset.sigs.k8s.io/jobset-name=sft"

// startTwoRanks creates, in a new namespace, the JobSet of a 2-node training job sft rendered
// with multiNode jobset, whose ranks kwok keeps Running for runFor each attempt, and returns
// once both ranks run.
func startTwoRanks(t *testing.T, runFor string) (kubernetes.Interface, dynamic.Interface, string, map[int]*corev1.Pod) {
	t.Helper()
	client, ns := newClient(t), newNamespace(t)
	testcluster.DumpOnFailure(t, client, ns)
	dyn, err := dynamic.NewForConfig(testcluster.Current().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	js := renderJobSet(t, dyn, ns, `kind: training
version: v0.1
job: {name: sft}
environment: {image: registry.example.com/train:v1, command: [torchrun, train.py]}
resources: {gpu: 1, node_count: 2}
`)
	setRunFor(t, js, runFor)
	if _, err := dyn.Resource(testcluster.JobSetResource).Namespace(ns).Create(t.Context(), js, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return client, dyn, ns, waitRanksRunning(t, client, ns, sftSelector, 2, nil)
}

// renderJobSet renders one gpuctl training file with multiNode jobset into namespace ns,
// creates gpuctl's PriorityClasses and returns the JobSet.
func renderJobSet(t *testing.T, dyn dynamic.Interface, ns, file string) *unstructured.Unstructured {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile("/repo/train.yaml", []byte(file)); err != nil {
		t.Fatal(err)
	}
	cfg := &render.Config{MultiNode: render.MultiNodeJobSet, Namespaces: []render.NamespaceRule{{Path: "**", Namespace: ns}}}
	res, err := render.New(render.Options{Config: cfg}).Render(fs, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	var js *unstructured.Unstructured
	for _, o := range res.Objects {
		switch o.GetKind() {
		case render.JobSetKind:
			js = o
		case "PriorityClass": // gpuctl's, which the pods name
			_, err := dyn.Resource(schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}).
				Create(t.Context(), o, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
	if js != nil {
		return js
	}
	t.Fatalf("no JobSet rendered from %s", file)
	return nil
}

// setRunFor makes kwok keep each attempt's ranks of the JobSet Running for d, then succeed.
func setRunFor(t *testing.T, js *unstructured.Unstructured, d string) {
	t.Helper()
	dur, err := time.ParseDuration(d)
	if err == nil {
		err = testcluster.RunJobSetFor(js, dur)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// mustGet reads JobSet name of ns.
func mustGet(t *testing.T, dyn dynamic.Interface, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(testcluster.JobSetResource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}
