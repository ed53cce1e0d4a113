package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// reasonsTaint keeps the pods of other tests off the node of TestJobReasons.
const reasonsTaint = "g8s.host/test-reasons"

// reasonJob creates a training Job (backoffLimit 0, as render makes them today) of one pod
// on node, asking for gpus, that tolerates reasonsTaint; edit changes it before.
func reasonJob(t *testing.T, kube kubernetes.Interface, ns, name, node string, gpus int64, edit func(*batchv1.Job)) {
	t.Helper()
	tmpl := gpuTemplate(name, "training", gpus)
	tmpl.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	tmpl.Spec.Tolerations = []corev1.Toleration{{Key: reasonsTaint, Operator: corev1.TolerationOpExists}}
	one := int32(1)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tmpl.Labels},
		Spec: batchv1.JobSpec{Parallelism: &one, Completions: &one, Template: tmpl, BackoffLimit: new(int32)}}
	if edit != nil {
		edit(job)
	}
	if _, err := kube.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// jobFailed waits until the Job has its Failed condition.
func jobFailed(t *testing.T, kube kubernetes.Interface, ns, name string) {
	t.Helper()
	waitUntilFor(t, "job "+name+" to fail", time.Minute, func(ctx context.Context) bool {
		j, err := kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cluster.JobStatus(j) == cluster.StatusFailed
	})
}

// describeJSON is describe job -o json.
func describeJSON(t *testing.T, id string) cluster.JobDescription {
	t.Helper()
	out, errOut, code := gpuctl(t, "describe", "job", id, "-o", "json")
	var d cluster.JobDescription
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
		t.Fatalf("describe job %s -o json: exit %d %s\n%s", id, code, errOut, out)
	}
	return d
}

// priorityClass creates a PriorityClass unless it exists, and deletes it after the test if it
// made it.
func priorityClass(t *testing.T, kube kubernetes.Interface, name string, value int32) {
	t.Helper()
	_, err := kube.SchedulingV1().PriorityClasses().Create(t.Context(), &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
	case err != nil:
		t.Fatal(err)
	default:
		t.Cleanup(func() {
			_ = kube.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
}

// TestJobReasons: get jobs -o wide and describe job say why a training Job ended — its own
// fault (exit code 1 with its last log lines, OOMKilled with its memory limit), preempted by a
// higher-priority job (still told once the pod is gone: the attempt names the preemptor's job
// and PriorityClass), and evicted from a node tainted unreachable (the node named).
func TestJobReasons(t *testing.T) {
	c := testcluster.Current()
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	const node = "reasons-gpu-0"
	if err := c.AddNode(t.Context(), testcluster.NodeSpec{Name: node, GPUs: 4, GPUType: "reasons-t4",
		Taints: []corev1.Taint{{Key: reasonsTaint, Effect: corev1.TaintEffectNoSchedule}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNode(context.Background(), node) })
	ns := logsNamespace(t, kube, "reasons-e2e")
	priorityClass(t, kube, keys.PriorityClassLow, 1000)
	priorityClass(t, kube, keys.PriorityClassHigh, 100000)

	t.Run("exit code 1", func(t *testing.T) {
		reasonJob(t, kube, ns, "crash", node, 0, func(j *batchv1.Job) { testcluster.FailingPod(&j.Spec.Template, "Error", 1) })
		pod := startedPods(t, kube, ns, "crash", 1)[0]
		writeLog(t, ns, pod.Name, "epoch 1 loss 0.9", "Traceback (most recent call last):", "ValueError: bad batch")
		jobFailed(t, kube, ns, "crash")
		if out, _, _ := gpuctl(t, "get", "jobs", "-n", ns, "-o", "wide"); !regexp.MustCompile(`(?m)^crash-\S+ +crash .* Error: exit code 1; container main: exit code 1$`).MatchString(out) {
			t.Errorf("get jobs -o wide: no REASON Error: exit code 1\n%s", out)
		}
		out, _, _ := gpuctl(t, "describe", "job", "crash", "-n", ns)
		for _, want := range []string{"Reason:", "Error: exit code 1", "Attempts:", "Failed", "Last log lines (" + pod.Name + "):", "  ValueError: bad batch"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe job crash: no %q\n%s", want, out)
			}
		}
	})

	t.Run("OOMKilled", func(t *testing.T) {
		reasonJob(t, kube, ns, "oom", node, 0, func(j *batchv1.Job) {
			testcluster.FailingPod(&j.Spec.Template, "OOMKilled", 137)
			j.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("64Gi")
		})
		jobFailed(t, kube, ns, "oom")
		d := describeJSON(t, ns+".oom")
		if d.Job.Reason != "OOMKilled (64Gi limit)" || len(d.Job.Attempts) != 1 || d.Job.Attempts[0].ExitCode == nil || *d.Job.Attempts[0].ExitCode != 137 {
			t.Errorf("describe job oom -o json: reason %q attempts %+v", d.Job.Reason, d.Job.Attempts)
		}
	})

	t.Run("preempted", func(t *testing.T) {
		reasonJob(t, kube, ns, "low", node, 4, func(j *batchv1.Job) {
			j.Spec.Template.Spec.PriorityClassName = keys.PriorityClassLow
			testcluster.RunFor(&j.Spec.Template, 10*time.Minute)
		})
		startedPods(t, kube, ns, "low", 1)
		reasonJob(t, kube, ns, "high", node, 4, func(j *batchv1.Job) {
			j.Spec.Template.Spec.PriorityClassName = keys.PriorityClassHigh
			testcluster.RunFor(&j.Spec.Template, 10*time.Minute)
		})
		jobFailed(t, kube, ns, "low")
		waitUntilFor(t, "the preempted pod to be gone", time.Minute, func(ctx context.Context) bool {
			list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: keys.App + "=low"})
			return err == nil && len(list.Items) == 0
		})
		want := "Preempted by " + ns + "/high (gpuctl-high)"
		d := describeJSON(t, ns+".low")
		if len(d.Job.Attempts) != 1 || !d.Job.Attempts[0].Gone || d.Job.Attempts[0].Reason != want || d.Job.Attempts[0].Node != node ||
			d.Job.Attempts[0].Outcome != cluster.AttemptDisrupted || !strings.HasPrefix(d.Job.Reason, want) {
			t.Errorf("describe job low: reason %q, attempts %+v, want %q", d.Job.Reason, d.Job.Attempts, want)
		}
		out, _, _ := gpuctl(t, "describe", "job", "low", "-n", ns)
		if !regexp.MustCompile(`(?m)^  1 +low-\S+ \(gone\) +` + node + ` .* Disrupted +<none> +` + regexp.QuoteMeta(want) + `$`).MatchString(out) {
			t.Errorf("describe job low: no attempt preempted by high\n%s", out)
		}
		if err := kube.BatchV1().Jobs(ns).Delete(t.Context(), "high", metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("preempted and retried", func(t *testing.T) {
		waitUntilFor(t, "the GPUs of "+node+" to be free", time.Minute, func(ctx context.Context) bool {
			held, _, err := gpusHeld(ctx, kube, node, "")
			return err == nil && held == 0
		})
		// As render makes a retried training Job: one index, a disruption ignored, 3 retries.
		reasonJob(t, kube, ns, "retry", node, 4, func(j *batchv1.Job) {
			j.Spec.Template.Spec.PriorityClassName = keys.PriorityClassLow
			testcluster.RunFor(&j.Spec.Template, 10*time.Minute)
			mode := batchv1.IndexedCompletion
			j.Spec.CompletionMode, j.Spec.BackoffLimit, j.Spec.BackoffLimitPerIndex = &mode, nil, new(int32(3))
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
		})
		startedPods(t, kube, ns, "retry", 1)
		reasonJob(t, kube, ns, "high2", node, 4, func(j *batchv1.Job) {
			j.Spec.Template.Spec.PriorityClassName = keys.PriorityClassHigh
			testcluster.RunFor(&j.Spec.Template, 10*time.Minute)
		})
		want := "Preempted by " + ns + "/high2 (gpuctl-high), retried (attempt 2 of 4)"
		var d cluster.JobDescription
		waitUntilFor(t, "the retried job's reason", time.Minute, func(context.Context) bool {
			d = describeJSON(t, ns+".retry")
			return d.Job.Reason == want
		})
		if d.Job.Status == cluster.StatusFailed || len(d.Job.Attempts) != 2 || d.Job.Attempts[0].Outcome != cluster.AttemptDisrupted ||
			d.Job.Attempts[1].Outcome != cluster.AttemptPending {
			t.Errorf("describe job retry: status %s, attempts %+v", d.Job.Status, d.Job.Attempts)
		}
		if out, _, _ := gpuctl(t, "get", "jobs", "-n", ns, "-o", "wide"); !strings.Contains(out, want) {
			t.Errorf("get jobs -o wide: no REASON %q\n%s", want, out)
		}
		for _, job := range []string{"high2", "retry"} {
			if err := kube.BatchV1().Jobs(ns).Delete(t.Context(), job, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("node lost", func(t *testing.T) {
		waitUntilFor(t, "the GPUs of "+node+" to be free", time.Minute, func(ctx context.Context) bool {
			held, _, err := gpusHeld(ctx, kube, node, "")
			return err == nil && held == 0
		})
		one := int64(1)
		reasonJob(t, kube, ns, "lost", node, 1, func(j *batchv1.Job) {
			testcluster.RunFor(&j.Spec.Template, 10*time.Minute)
			j.Spec.Template.Spec.Tolerations = append(j.Spec.Template.Spec.Tolerations, corev1.Toleration{Key: corev1.TaintNodeUnreachable,
				Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &one})
		})
		startedPods(t, kube, ns, "lost", 1)
		// The node lifecycle controller lifts the taint from a node that kwok keeps Ready, at
		// times before the taint manager has evicted (a loaded machine): the taint is put back
		// until the job has failed.
		tainted, stop := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(tainted)
			for {
				if n, err := kube.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{}); err == nil && !slices.ContainsFunc(n.Spec.Taints,
					func(tt corev1.Taint) bool { return tt.Key == corev1.TaintNodeUnreachable }) {
					n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
					_, _ = kube.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{})
				}
				select {
				case <-stop:
					return
				case <-t.Context().Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
		jobFailed(t, kube, ns, "lost")
		close(stop)
		<-tainted
		// "unreachable" while the taint holds; the node controller lifts it from a node that
		// kwok keeps Ready, after which the reason still names the node.
		want := "Evicted: node " + node + " "
		var d cluster.JobDescription
		defer func() {
			if t.Failed() {
				t.Logf("the last description: reason %q, attempts %+v, events %+v", d.Job.Reason, d.Job.Attempts, d.Events)
			}
		}()
		waitUntilFor(t, "describe to name the lost node", time.Minute, func(context.Context) bool {
			d = describeJSON(t, ns+".lost")
			return len(d.Job.Attempts) == 1 && strings.HasPrefix(d.Job.Attempts[0].Reason, want) && strings.HasPrefix(d.Job.Reason, want)
		})
		if out, _, _ := gpuctl(t, "get", "jobs", "-n", ns, "-o", "wide"); !regexp.MustCompile(`(?m) lost .* ` + regexp.QuoteMeta(want)).MatchString(out) {
			t.Errorf("get jobs -o wide: no REASON %q\n%s", want, out)
		}
	})
}
