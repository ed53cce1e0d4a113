package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
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

// A cached workload keeps of its pod template what the model reads — the requests (a
// sidecar's too), the node selector — and of its spec the rest; images, commands, environment
// and volumes go.
func TestTrimWorkload(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	one, par := int32(1), int32(4)
	req := func(cpu, gpu string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), keys.ResourceGPU: resource.MustParse(gpu)}
		return corev1.ResourceRequirements{Requests: l, Limits: l}
	}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "sft"}},
		Spec: corev1.PodSpec{
			NodeSelector:   map[string]string{keys.GPUType: "a100"},
			Containers:     []corev1.Container{{Name: "main", Image: "trainer:1", Command: []string{"train"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}}, Resources: req("4", "8")}},
			InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &always, Resources: req("1", "0")}, {Name: "init", Image: "init:1", Resources: req("8", "0")}},
			Volumes:        []corev1.Volume{{Name: "data"}},
		},
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "sft", Namespace: "alice", Labels: map[string]string{keys.ManagedBy: keys.ManagedByValue}},
		Spec: batchv1.JobSpec{Parallelism: &par, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sft"}}, Template: *template.DeepCopy()}}
	dep := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &one, Template: *template.DeepCopy()}}
	sts := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: &one, Template: *template.DeepCopy()}}
	before := object.PodRequests(&template.Spec)
	for _, o := range []struct {
		obj  any
		tmpl func() *corev1.PodTemplateSpec
	}{
		{job, func() *corev1.PodTemplateSpec { return &job.Spec.Template }},
		{dep, func() *corev1.PodTemplateSpec { return &dep.Spec.Template }},
		{sts, func() *corev1.PodTemplateSpec { return &sts.Spec.Template }},
	} {
		if _, err := trimObject(o.obj); err != nil {
			t.Fatal(err)
		}
		got := o.tmpl()
		if after := object.PodRequests(&got.Spec); !equality.Semantic.DeepEqual(after, before) {
			t.Errorf("%T: requests %v after the trim, %v before", o.obj, after, before)
		}
		if got.Spec.NodeSelector[keys.GPUType] != "a100" {
			t.Errorf("%T: node selector %v", o.obj, got.Spec.NodeSelector)
		}
		if got.Spec.Containers[0].Image != "" || got.Spec.Containers[0].Env != nil || got.Spec.Volumes != nil || got.Spec.InitContainers[0].Image != "" {
			t.Errorf("%T: the template keeps what no reader reads: %+v", o.obj, got.Spec)
		}
	}
	if *job.Spec.Parallelism != 4 || job.Spec.Selector.MatchLabels["app"] != "sft" || job.Labels[keys.ManagedBy] != keys.ManagedByValue {
		t.Errorf("the Job's own fields changed: %+v", job.Spec)
	}
	if w := fromJob(job); w.gpus() != 4*8 || w.gpuType() != "a100" {
		t.Errorf("the model reads %d GPUs of type %q from the trimmed Job, want 32 of a100", w.gpus(), w.gpuType())
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

// TestLazyInformers: lazy informers list nothing before the first read, answer it from their
// first lists, follow the cluster while read, stop once no read came for their idle time (a
// copy of every pod and event is not kept for an API nobody reads), and start again, from the
// cluster as it is then, with the next read.
func TestLazyInformers(t *testing.T) {
	client := fake.NewClientset(fx.Objects()...)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const idle = 2 * time.Second // long beside the reads' pace: a loaded machine may stall a read
	informed := LazyInformers(ctx, nil, client, nil, "", idle)
	listed := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "list" {
				n++
			}
		}
		return n
	}
	time.Sleep(300 * time.Millisecond)
	if n := listed(); n != 0 || informed.starts.Load() != 0 {
		t.Fatalf("before any read: %d lists, %d starts", n, informed.starts.Load())
	}
	r := &Reader{Client: client, Objects: informed}
	jobNames := func() []string {
		t.Helper()
		jobs, err := r.Jobs(ctx, JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range jobs.Items {
			names = append(names, j.JobID)
		}
		return names
	}
	first := jobNames()
	if len(first) == 0 || listed() == 0 {
		t.Fatalf("the first read: jobs %v after %d lists", first, listed())
	}
	job := func(name string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "alice",
			Labels: map[string]string{keys.ManagedBy: keys.ManagedByValue, keys.JobType: "training"}}}
	}
	if _, err := client.BatchV1().Jobs("alice").Create(ctx, job("while-read"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Reads more often than idle keep the informers: the watch brings the new Job.
	for deadline := time.Now().Add(idle + idle/2); ; time.Sleep(idle / 10) {
		if slices.Contains(jobNames(), "alice.while-read") && time.Now().After(deadline) {
			break
		}
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("the watch did not bring alice.while-read: %v", jobNames())
		}
	}
	if n := informed.starts.Load(); n != 1 {
		t.Fatalf("read every %s with idle %s: %d starts, want 1", idle/10, idle, n)
	}
	// No read: they stop.
	for deadline := time.Now().Add(5*idle + 10*time.Second); ; time.Sleep(50 * time.Millisecond) {
		informed.mu.Lock()
		stopped := informed.cur == nil
		informed.mu.Unlock()
		if stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running %s after the last read (idle %s)", 5*idle+10*time.Second, idle)
		}
	}
	if _, err := client.BatchV1().Jobs("alice").Create(ctx, job("while-stopped"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := listed()
	if got := jobNames(); !slices.Contains(got, "alice.while-stopped") || !slices.Contains(got, "alice.while-read") {
		t.Fatalf("the read after the stop: %v, want alice.while-stopped and alice.while-read", got)
	}
	if informed.starts.Load() != 2 || listed() <= before {
		t.Fatalf("the read after the stop: %d starts, %d lists (%d before): the informers did not start again", informed.starts.Load(), listed(), before)
	}
}
