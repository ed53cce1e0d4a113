package kueuepause_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/kueuepause"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
)

func job(name string, paused bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name, "namespace": "alice"}}}
	if paused {
		u.SetAnnotations(map[string]string{keys.Paused: keys.PausedValue})
	}
	return u
}

// workload is Kueue's Workload of a Job; active nil leaves spec.active unset.
func workload(name, jobName string, active *bool, marked bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": keys.KueueGroup + "/" + keys.KueueVersion, "kind": "Workload",
		"metadata": map[string]any{"name": name, "namespace": "alice"}, "spec": map[string]any{"queueName": "default"}}}
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: jobName, UID: types.UID("u-" + jobName)}})
	if active != nil {
		_ = unstructured.SetNestedField(u.Object, *active, "spec", "active")
	}
	if marked {
		u.SetLabels(map[string]string{keys.Paused: keys.PausedValue})
	}
	return u
}

func TestSync(t *testing.T) {
	yes, no := true, false
	cases := map[string]struct {
		jobs       []*unstructured.Unstructured
		wl         *unstructured.Unstructured
		wantActive bool
		wantMarked bool
	}{
		"paused, admitted: deactivated": {jobs: []*unstructured.Unstructured{job("sft", true)}, wl: workload("job-sft-1", "sft", nil, false), wantActive: false, wantMarked: true},
		"paused, already deactivated":   {jobs: []*unstructured.Unstructured{job("sft", true)}, wl: workload("job-sft-1", "sft", &no, true), wantActive: false, wantMarked: true},
		"resumed: activated again":      {jobs: []*unstructured.Unstructured{job("sft", false)}, wl: workload("job-sft-1", "sft", &no, true), wantActive: true, wantMarked: false},
		"stopped by someone else: left": {jobs: []*unstructured.Unstructured{job("sft", false)}, wl: workload("job-sft-1", "sft", &no, false), wantActive: false, wantMarked: false},
		"not paused: left":              {jobs: []*unstructured.Unstructured{job("sft", false)}, wl: workload("job-sft-1", "sft", &yes, false), wantActive: true, wantMarked: false},
		"another Job's Workload: left":  {jobs: []*unstructured.Unstructured{job("sft", true)}, wl: workload("job-eval-1", "eval", &yes, false), wantActive: true, wantMarked: false},
		"a Job outside the sync: left":  {jobs: nil, wl: workload("job-sft-1", "sft", &no, true), wantActive: false, wantMarked: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			old := kueuepause.WaitForWorkload
			kueuepause.WaitForWorkload = 0
			defer func() { kueuepause.WaitForWorkload = old }()
			dyn := fakeClient(c.wl)
			if err := kueuepause.Sync(t.Context(), dyn, keys.FieldManager, c.jobs); err != nil {
				t.Fatal(err)
			}
			got, err := dyn.Resource(kueuepause.WorkloadResource).Namespace("alice").Get(t.Context(), c.wl.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			active, found, _ := unstructured.NestedBool(got.Object, "spec", "active")
			active = active || !found
			_, marked := got.GetLabels()[keys.Paused]
			if active != c.wantActive || marked != c.wantMarked {
				t.Fatalf("active %v marked %v, want %v %v", active, marked, c.wantActive, c.wantMarked)
			}
		})
	}
}

// TestSyncWaitsForKueue: the Workload of a Job just created comes a moment later.
func TestSyncWaitsForKueue(t *testing.T) {
	dyn := fakeClient()
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = dyn.Resource(kueuepause.WorkloadResource).Namespace("alice").Create(context.Background(), workload("job-sft-1", "sft", nil, false), metav1.CreateOptions{})
	}()
	if err := kueuepause.Sync(t.Context(), dyn, keys.FieldManager, []*unstructured.Unstructured{job("sft", true)}); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(kueuepause.WorkloadResource).Namespace("alice").Get(t.Context(), "job-sft-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if active, _, _ := unstructured.NestedBool(got.Object, "spec", "active"); active {
		t.Fatal("not deactivated")
	}
}

func fakeClient(objs ...*unstructured.Unstructured) *dynfake.FakeDynamicClient {
	scheme := runtime.NewScheme()
	gvk := schema.GroupVersionKind{Group: keys.KueueGroup, Version: keys.KueueVersion, Kind: "Workload"}
	scheme.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
	scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind("WorkloadList"), &unstructured.UnstructuredList{})
	list := make([]runtime.Object, len(objs))
	for i, o := range objs {
		list[i] = o
	}
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{kueuepause.WorkloadResource: "WorkloadList"}, list...)
}

// TestSyncWaitsOnceForEveryTeam: paused Jobs of many teams whose Workloads never come (a
// team's files cannot stop Kueue from making them, but Kueue may be down) hold a sync up
// WaitForWorkload in all, not that much per team.
func TestSyncWaitsOnceForEveryTeam(t *testing.T) {
	old := kueuepause.WaitForWorkload
	kueuepause.WaitForWorkload = 300 * time.Millisecond
	defer func() { kueuepause.WaitForWorkload = old }()
	var jobs []*unstructured.Unstructured
	for _, ns := range []string{"a", "b", "c", "d", "e"} {
		j := job("sft", true)
		j.SetNamespace(ns)
		jobs = append(jobs, j)
	}
	start := time.Now()
	if err := kueuepause.Sync(t.Context(), fakeClient(), keys.FieldManager, jobs); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*kueuepause.WaitForWorkload {
		t.Errorf("5 teams' paused Jobs without Workloads held the sync %s, want about %s", took, kueuepause.WaitForWorkload)
	}
}
