package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Against the fake clientset: the same answers through informers as through plain lists.
// test/e2e compares the two against the local cluster, and counts the requests.
func TestInformerObjectsAnswerAsAPIObjects(t *testing.T) {
	objs := append(fx.Objects(), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "alice"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "alice", Name: "sft-abcde"},
		Type:           corev1.EventTypeNormal, Reason: "Started", Message: "started", LastTimestamp: *fx.At(time.Minute)})
	client := fake.NewClientset(objs...)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	informed := StartInformers(ctx, client, nil, "")
	if err := informed.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	direct, cached := &Reader{Client: client}, &Reader{Client: client, Objects: informed}
	answers := map[string]func(r *Reader) (any, error){
		"Jobs":         func(r *Reader) (any, error) { return r.Jobs(ctx, JobFilter{}) },
		"Jobs running": func(r *Reader) (any, error) { return r.Jobs(ctx, JobFilter{Status: "running"}) },
		"Job alice.sft": func(r *Reader) (any, error) {
			return r.Job(ctx, "alice.sft")
		},
		"Job llm":          func(r *Reader) (any, error) { return r.Job(ctx, "llm") },
		"Job bob.other":    func(r *Reader) (any, error) { return r.Job(ctx, "bob.other") }, // not gpuctl's
		"JobEvents":        func(r *Reader) (any, error) { return r.JobEvents(ctx, "alice.sft") },
		"Pools":            func(r *Reader) (any, error) { return r.Pools(ctx) },
		"Pool":             func(r *Reader) (any, error) { return r.Pool(ctx, "training-pool") },
		"Nodes":            func(r *Reader) (any, error) { return r.Nodes(ctx, NodeFilter{}) },
		"Node gpu-1":       func(r *Reader) (any, error) { return r.Node(ctx, "gpu-1") },
		"Node nope":        func(r *Reader) (any, error) { return r.Node(ctx, "nope") },
		"Quotas":           func(r *Reader) (any, error) { return r.Quotas(ctx) },
		"Quota alice":      func(r *Reader) (any, error) { return r.Quota(ctx, "alice") },
		"Events all":       func(r *Reader) (any, error) { return r.Events(ctx, "") },
		"ambiguous or not": func(r *Reader) (any, error) { return r.Job(ctx, "web") },
	}
	for name, answer := range answers {
		want, wantErr := answer(direct)
		got, gotErr := answer(cached)
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if string(w) != string(g) || (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Errorf("%s:\n API:       %s %v\n informers: %s %v", name, w, wantErr, g, gotErr)
		}
	}
	// A registry of another namespace is not cached: an error, not an empty registry.
	if _, err := (&Reader{Client: client, Objects: informed, Namespace: "elsewhere"}).Pools(ctx); err == nil {
		t.Error("the pools of another registry namespace read as empty")
	}
}

func TestTrimObject(t *testing.T) {
	p := fx.Pod("alice", "p", "sft", "gpu-1", corev1.PodRunning, 1, nil)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	p.Annotations = map[string]string{lastApplied: "{}", "keep": "me"}
	got, err := trimObject(p)
	if err != nil || got.(*corev1.Pod).ManagedFields != nil || len(p.Annotations) != 1 || p.Annotations["keep"] != "me" {
		t.Errorf("trimmed %+v, %v", got.(*corev1.Pod).ObjectMeta, err)
	}
	if _, err := trimObject("not an object"); err != nil {
		t.Errorf("a tombstone or other value: %v", err)
	}
}

// TestStartInformersAfter: the informers list nothing before their gate opens; reads then
// wait for their first lists as ever.
func TestStartInformersAfter(t *testing.T) {
	client := fake.NewClientset(fx.Objects()...)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	gate := make(chan struct{})
	informed := StartInformersAfter(ctx, gate, client, nil, "")
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if err := informed.WaitForSync(short); err == nil {
		t.Fatal("synced before the gate opened")
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			t.Fatalf("%s %s before the gate opened", a.GetVerb(), a.GetResource().Resource)
		}
	}
	close(gate)
	if err := informed.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if jobs, err := (&Reader{Client: client, Objects: informed}).Jobs(ctx, JobFilter{}); err != nil || len(jobs.Items) == 0 {
		t.Fatalf("after the gate: %d jobs, %v", len(jobs.Items), err)
	}
}
