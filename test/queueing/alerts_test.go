package queueing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/notify"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/sources/local"
	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// recorded is a notify.Sender that keeps what it is sent.
type recorded struct{ notify.Recorder }

// of are the alerts of a reason sent so far.
func (r *recorded) of(reason notify.Reason) []notify.Event {
	var out []notify.Event
	for _, e := range r.Events() {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// wait waits for an alert that ok accepts and returns it.
func (r *recorded) wait(t *testing.T, what string, ok func(notify.Event) bool) notify.Event {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := r.Events()
		for _, e := range got {
			if ok(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in %+v", what, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAlertsOfJobSetsAndClusterQueues: with queueing kueue, the leading daemon sends
// QuotaReached when the workloads of a team's ClusterQueue reserve all of its nominal GPUs
// (hold: 4), and QuotaFreed when the job goes; with multiNode jobset, a gpuctl JobSet that
// fails (its rank OOMKilled, exit code 137) sends exactly one JobFailed that names the JobSet,
// its reason and the pod's (not one more for its child Job), resolved when it is deleted.
func TestAlertsOfJobSetsAndClusterQueues(t *testing.T) {
	client, dyn := clients(t)
	r := newRepo(t)
	const ns = "hold" // 4 GPUs, neither lends nor borrows
	testcluster.DumpOnFailure(t, client, ns)
	r.edit(".gpuctl.yaml", "queueing: kueue", "queueing: kueue\nmultiNode: jobset")
	r.sync() // the team's namespace and queues, as the daemon's first sync leaves them

	cfg := testcluster.Current().RESTConfig()
	engine, err := reconciler.NewManager(cfg, reconciler.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	src, err := local.New(local.Options{Root: r.dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	alerts := &recorded{}
	d := daemon.New(daemon.Options{Source: src, Engine: engine, Store: daemon.NewStore(client, "sys-alerts"), Interval: time.Hour,
		Identity: "alerts", Alerts: alerts, Dynamic: dyn})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	background := metav1.DeletePropagationBackground

	// a Job of the team's 4 GPUs, admitted by Kueue: its ClusterQueue is full
	gpus := corev1.ResourceList{keys.ResourceGPU: resource.MustParse("4")}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "all-gpus", Namespace: ns, Labels: map[string]string{keys.KueueQueueName: keys.KueueLocalQueue}},
		Spec: batchv1.JobSpec{BackoffLimit: new(int32), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{testcluster.RunForAnnotation: "5m"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeSelector: map[string]string{keys.Pool: "training-pool"},
				Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/train:v1", Resources: corev1.ResourceRequirements{Requests: gpus, Limits: gpus}}}}}}}
	if _, err := client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reached := alerts.wait(t, "QuotaReached", func(e notify.Event) bool { return e.Reason == notify.QuotaReached && e.Namespace == ns })
	if want := "team hold reserves all 4 of its 4 GPUs: new jobs queue"; reached.Key != "quota/"+ns || reached.Object != "ClusterQueue "+ns ||
		reached.Severity != notify.SeverityWarning || reached.Resolved || reached.Message != want {
		t.Errorf("QuotaReached %+v, want %q", reached, want)
	}
	if err := client.BatchV1().Jobs(ns).Delete(t.Context(), job.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	freed := alerts.wait(t, "QuotaFreed", func(e notify.Event) bool { return e.Reason == notify.QuotaFreed && e.Namespace == ns })
	if want := "team hold reserves 0 of its 4 GPUs"; freed.Key != "quota/"+ns || !freed.Resolved || freed.Message != want {
		t.Errorf("QuotaFreed %+v, want %q", freed, want)
	}
	if n := len(alerts.of(notify.QuotaReached)); n != 1 {
		t.Errorf("%d QuotaReached, want 1", n)
	}

	// a gpuctl JobSet whose one rank fails
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/train:v1"}}}}
	testcluster.FailingPod(&tmpl, "OOMKilled", 137)
	pod, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "ranks", "namespace": ns,
			"labels":      map[string]any{keys.ManagedBy: keys.ManagedByValue},
			"annotations": map[string]any{keys.Source: "teams/hold/ranks.yaml"}},
		"spec": map[string]any{
			"failurePolicy": map[string]any{"maxRestarts": int64(0)},
			"replicatedJobs": []any{map[string]any{"name": "rank", "replicas": int64(1),
				"template": map[string]any{"spec": map[string]any{"backoffLimit": int64(0), "template": pod}}}},
		}}}
	jobsets := dyn.Resource(schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}).Namespace(ns)
	if _, err := jobsets.Create(t.Context(), js, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := alerts.wait(t, "the JobSet's JobFailed", func(e notify.Event) bool { return e.Reason == notify.JobFailed && !e.Resolved })
	if failed.Object != "JobSet hold/ranks" || failed.Key != "job/hold/ranks" || failed.Severity != notify.SeverityError ||
		!strings.HasPrefix(failed.Message, "ranks failed: ") || !strings.Contains(failed.Message, ": OOMKilled, exit code 137)") ||
		len(failed.Details) != 1 || failed.Details[0] != "teams/hold/ranks.yaml" {
		t.Errorf("JobFailed %+v", failed)
	}
	t.Logf("JobFailed: %s", failed.Message)
	if err := jobsets.Delete(t.Context(), "ranks", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	alerts.wait(t, "the JobSet's JobFailed resolved", func(e notify.Event) bool { return e.Reason == notify.JobFailed && e.Resolved })
	if jf := alerts.of(notify.JobFailed); len(jf) != 2 || jf[1].Key != "job/hold/ranks" || jf[1].Object != "JobSet hold/ranks" {
		t.Errorf("JobFailed alerts %+v, want the JobSet's and its resolution", jf)
	}
}
