package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/notify"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waitAlerts waits until the alerts sent so far hold one that ok accepts, and returns them all.
func waitAlerts(t *testing.T, alerts *sent, what string, ok func(notify.Event) bool) []notify.Event {
	t.Helper()
	var got []notify.Event
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = append(got, alerts.take()...)
		for _, e := range got {
			if ok(e) {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in %+v", what, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// of are the alerts of a reason.
func of(events []notify.Event, r notify.Reason) []notify.Event {
	var out []notify.Event
	for _, e := range events {
		if e.Reason == r {
			out = append(out, e)
		}
	}
	return out
}

// TestJobFailedAndQuotaAlerts: the leader tells of a gpuctl Job whose pod fails (OOMKilled, exit
// code 137) with exactly one JobFailed that gives the Job's and the pod's reasons, closed when
// the Job is deleted; a Job that failed before the daemon led is not told. A team whose pods
// request both GPUs of its quota gets QuotaReached, and QuotaFreed when one of them goes.
// (A MultiKueue copy's failure is the manager's to tell in a worker only:
// TestMultiKueueCopyFailure.)
func TestJobFailedAndQuotaAlerts(t *testing.T) {
	team := "jobwatch-team"
	alerts := &sent{}
	h := newHarness(t, "jobwatch", map[string]string{
		"quota.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: gpus}\nusers:\n  " + team + ": {gpu: 2}\n",
	}, func(o *daemon.Options) { o.Alerts = alerts })
	failingJob := func(name string) {
		t.Helper()
		tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector: map[string]string{"kubernetes.io/hostname": "cpu-0"}, Containers: []corev1.Container{{Name: "main", Image: "trainer:v1"}}}}
		testcluster.FailingPod(&tmpl, "OOMKilled", 137)
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: team,
			Labels: map[string]string{keys.ManagedBy: keys.ManagedByValue, keys.JobType: "training"}, Annotations: map[string]string{keys.Source: "teams/" + name + ".yaml"}},
			Spec: batchv1.JobSpec{BackoffLimit: new(int32), Template: tmpl}}
		if _, err := h.kube.BatchV1().Jobs(team).Create(h.ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	failed := func(name string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			j, err := h.kube.BatchV1().Jobs(team).Get(h.ctx, name, metav1.GetOptions{})
			if err == nil {
				for _, c := range j.Status.Conditions {
					if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
						return
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s did not fail: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// the team's namespace and quota, by a sync, before the daemon leads
	if st := h.d.SyncOnce(h.ctx, ""); st.Result != daemon.ResultSucceeded {
		t.Fatalf("sync: %s %s", st.Result, st.Message)
	}
	failingJob("before")
	failed("before")
	alerts.take()

	h.start()
	// the quota: two pods of one GPU each reach it, deleting one frees it
	pod := func(name string) *corev1.Pod {
		gpu := corev1.ResourceList{keys.ResourceGPU: resource.MustParse("1")}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: team},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"no-such-node": "true"}, Containers: []corev1.Container{{Name: "main", Image: "trainer:v1",
				Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu}}}}}
	}
	for _, name := range []string{"gpu-a", "gpu-b"} {
		deadline := time.Now().Add(30 * time.Second)
		for { // refused until the quota's controller has computed its status
			_, err := h.kube.CoreV1().Pods(team).Create(h.ctx, pod(name), metav1.CreateOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	got := waitAlerts(t, alerts, "QuotaReached", func(e notify.Event) bool { return e.Reason == notify.QuotaReached })
	reached := of(got, notify.QuotaReached)
	want := "team " + team + " requests all 2 of its 2 GPUs: new jobs wait"
	if e := reached[0]; len(reached) != 1 || e.Namespace != team || e.Key != "quota/"+team || e.Severity != notify.SeverityWarning || e.Resolved || e.Message != want {
		t.Errorf("QuotaReached %+v, want one with %q", reached, want)
	}
	if f := of(got, notify.JobFailed); len(f) != 0 {
		t.Errorf("a Job that failed before the daemon led was told: %+v", f)
	}
	if err := h.kube.CoreV1().Pods(team).Delete(h.ctx, "gpu-b", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	got = waitAlerts(t, alerts, "QuotaFreed", func(e notify.Event) bool { return e.Reason == notify.QuotaFreed })
	if freed := of(got, notify.QuotaFreed); len(freed) != 1 || !freed[0].Resolved || freed[0].Key != "quota/"+team ||
		freed[0].Message != "team "+team+" requests 1 of its 2 GPUs" {
		t.Errorf("QuotaFreed %+v", freed)
	}

	// a Job that fails while the daemon leads
	failingJob("sft")
	got = waitAlerts(t, alerts, "JobFailed", func(e notify.Event) bool { return e.Reason == notify.JobFailed })
	failed("sft")
	time.Sleep(time.Second) // the Job's later updates (its pods' counts) tell nothing more
	got = append(got, alerts.take()...)
	jf := of(got, notify.JobFailed)
	if len(jf) != 1 {
		t.Fatalf("JobFailed %+v, want exactly one", jf)
	}
	e := jf[0]
	if e.Namespace != team || e.Object != "Job "+team+"/sft" || e.Key != "job/"+team+"/sft" || e.Severity != notify.SeverityError || e.Resolved ||
		!strings.HasPrefix(e.Message, "sft failed: BackoffLimitExceeded: ") || !strings.Contains(e.Message, ": OOMKilled, exit code 137)") ||
		len(e.Details) != 1 || e.Details[0] != "teams/sft.yaml" {
		t.Errorf("JobFailed %+v", e)
	}
	t.Logf("JobFailed: %s", e.Message)
	background := metav1.DeletePropagationBackground
	if err := h.kube.BatchV1().Jobs(team).Delete(h.ctx, "sft", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	got = waitAlerts(t, alerts, "the JobFailed's resolution", func(e notify.Event) bool { return e.Reason == notify.JobFailed && e.Resolved })
	if r := of(got, notify.JobFailed); len(r) != 1 || r[0].Key != "job/"+team+"/sft" || r[0].Severity != notify.SeverityInfo {
		t.Errorf("after the delete %+v, want one resolved JobFailed", r)
	}
}
