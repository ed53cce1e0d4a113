package retries

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPreemptedJobWaitsAndCompletes is the demo's case (issue 31): a medium job holds the 8
// GPUs of its pool, a high job needs them. The scheduler preempts the medium one (its pod ends
// with DisruptionTarget); the Job does not fail but makes a new pod, which waits for the GPUs,
// runs after the high job, and completes. On a Job with backoffLimit 0 and no podFailurePolicy
// the preemption failed the medium job for good.
func TestPreemptedJobWaitsAndCompletes(t *testing.T) {
	client := newClient(t)
	r := newRepo(t)
	r.training("medium", "preempt-pool", "medium", 8, "", runFor(30*time.Second))
	r.sync()
	first := runningPod(t, client, "medium")

	r.training("high", "preempt-pool", "high", 8, "", runFor(3*time.Second))
	r.sync()
	high := waitFinished(t, client, "high")
	medium := waitFinished(t, client, "medium")
	if high.Type != batchv1.JobComplete || medium.Type != batchv1.JobComplete {
		t.Fatalf("high ended %s (%s), medium %s (%s: %s); want both Complete",
			high.Type, high.Reason, medium.Type, medium.Reason, medium.Message)
	}
	if !medium.LastTransitionTime.After(high.LastTransitionTime.Time) {
		t.Errorf("medium completed at %s, not after high (%s): it was not preempted",
			medium.LastTransitionTime, high.LastTransitionTime)
	}
	job, err := client.BatchV1().Jobs(metav1.NamespaceDefault).Get(t.Context(), "medium", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status.Failed != 0 {
		t.Errorf("medium counts %d failed pods; a preemption is not counted", job.Status.Failed)
	}
	last := lastPod(t, "medium")
	if last.Name == first.Name {
		t.Fatalf("medium completed in its first pod %s: it was never preempted", first.Name)
	}
	attempts(t, last, "0", "1") // GPUCTL_FAILED_ATTEMPTS, GPUCTL_DISRUPTED_ATTEMPTS
	t.Logf("medium: pod %s preempted, pod %s completed %s after high",
		first.Name, last.Name, medium.LastTransitionTime.Sub(high.LastTransitionTime.Time))
}

// TestNodeLossReplacesThePod: the node of a running job is tainted
// node.kubernetes.io/unreachable (NoSchedule and NoExecute, as the node lifecycle controller
// taints a node it lost); the taint manager evicts the pod (DisruptionTarget), and the Job runs
// it again on the other node of its pool, where it completes.
func TestNodeLossReplacesThePod(t *testing.T) {
	client := newClient(t)
	r := newRepo(t)
	// The API server gives every pod 300 s of toleration of an unreachable node
	// (DefaultTolerationSeconds); the patch gives this job's pods 1 s.
	r.training("survivor", "loss-pool", "medium", 8, "", runFor(8*time.Second)+
		"          spec:\n            tolerations:\n"+
		"              - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}\n")
	r.sync()
	first := runningPod(t, client, "survivor")
	lost := first.Spec.NodeName
	taint(t, lost)
	second := runningPod(t, client, "survivor", first.Name)
	if second.Spec.NodeName == lost {
		t.Fatalf("the new pod %s runs on the lost node %s", second.Name, lost)
	}
	cond := waitFinished(t, client, "survivor")
	if cond.Type != batchv1.JobComplete {
		t.Fatalf("survivor ended %s (%s: %s); want Complete", cond.Type, cond.Reason, cond.Message)
	}
	attempts(t, lastPod(t, "survivor"), "0", "1")
	t.Logf("survivor: pod %s lost with node %s, pod %s completed on %s", first.Name, lost, second.Name, second.Spec.NodeName)
}

// taint taints a node as unreachable, as the node lifecycle controller does when it loses a
// node (NoSchedule and NoExecute), and takes the taints off when the test ends. kwok keeps the
// node Ready, so the node lifecycle controller soon takes the NoSchedule taint off again, which
// it would not do to a node that is gone: the node is also cordoned, to hold what that taint
// holds, that no new pod lands on it.
func taint(t *testing.T, node string) {
	t.Helper()
	client := newClient(t)
	patch := func(ctx context.Context, unschedulable bool, taints []corev1.Taint) error {
		b, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": unschedulable, "taints": taints}})
		_, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	now := metav1.Now()
	if err := patch(t.Context(), true, []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := patch(context.Background(), false, nil); err != nil {
			t.Errorf("untaint %s: %v", node, err)
		}
	})
}

// TestOwnFailure: a run's own failure fails the job at once, even with retryable exit codes
// declared (crash exits 1); an exit code declared retryable is run again up to job.retries.max
// (2) and then fails the job (flaky exits 75: three attempts, told their number).
func TestOwnFailure(t *testing.T) {
	client := newClient(t)
	r := newRepo(t)
	retries := "  retries: {onExitCodes: [75], max: 2}\n"
	r.training("crash", "own-pool", "medium", 1, retries, failWith("Error", 1))
	r.training("flaky", "own-pool", "medium", 1, retries, failWith("Error", 75))
	r.sync()
	for job, want := range map[string]int{"crash": 1, "flaky": 3} {
		cond := waitFinished(t, client, job)
		if cond.Type != batchv1.JobFailed {
			t.Errorf("%s ended %s; want Failed", job, cond.Type)
			continue
		}
		time.Sleep(2 * time.Second) // a pod beyond the limit would have been made by now
		pods, err := podsOf(t.Context(), client, job)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != want {
			t.Errorf("%s ran %d attempts, want %d (%s: %s)", job, len(pods), want, cond.Reason, cond.Message)
			continue
		}
		for i, p := range pods {
			attempts(t, p, []string{"0", "1", "2"}[i], "")
		}
		t.Logf("%s: Failed after %d attempts (%s: %s)", job, len(pods), cond.Reason, cond.Message)
	}
}

// lastPod returns the newest pod of a Job of namespace default.
func lastPod(t *testing.T, job string) corev1.Pod {
	t.Helper()
	pods, err := podsOf(t.Context(), newClient(t), job)
	if err != nil || len(pods) == 0 {
		t.Fatalf("pods of %s: %d (%v)", job, len(pods), err)
	}
	return pods[len(pods)-1]
}

// attempts checks what a pod's GPUCTL_FAILED_ATTEMPTS and GPUCTL_DISRUPTED_ATTEMPTS read: the
// annotations that Kubernetes wrote on it (an absent one reads empty).
func attempts(t *testing.T, p corev1.Pod, failed, disrupted string) {
	t.Helper()
	got := [2]string{p.Annotations[batchv1.JobIndexFailureCountAnnotation], p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation]}
	if got != [2]string{failed, disrupted} {
		t.Errorf("pod %s: failed attempts %q, disrupted %q; want %q, %q", p.Name, got[0], got[1], failed, disrupted)
	}
}
