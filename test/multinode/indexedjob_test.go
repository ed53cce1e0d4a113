package multinode

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The measurement behind docs/format.md §2.2: Kubernetes' Indexed Job, with the best that its
// API offers for a lost rank (podFailurePolicy Ignore on DisruptionTarget, backoffLimitPerIndex
// for failures; its actions are FailJob, FailIndex, Ignore and Count, none restarts the other
// indexes), replaces only the rank that was lost. Rank 0's pod runs on, the same pod, while a new
// rank 1 starts: with a static rendezvous (torchrun --nnodes=2 --node_rank, the c10d store on
// rank 0) the new rank 1 joins a rendezvous that already closed, and rank 0 waits on a peer that
// is gone. So an Indexed Job cannot restart a multi-node job whole.
func TestIndexedJobReplacesOnlyTheLostRank(t *testing.T) {
	for name, lose := range map[string]func(t *testing.T, client kubernetes.Interface, pod *corev1.Pod){
		// Preemption, the taint manager and a drain end a pod with DisruptionTarget.
		"evicted": func(t *testing.T, client kubernetes.Interface, pod *corev1.Pod) {
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
			if err := client.PolicyV1().Evictions(pod.Namespace).Evict(t.Context(), ev); err != nil {
				t.Fatalf("evict rank 1: %v", err)
			}
		},
		// The rank's process exits 1 (kwok fails the pod once it carries the label).
		"failed": func(t *testing.T, client kubernetes.Interface, pod *corev1.Pod) {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, testcluster.FailLabel)
			if _, err := client.CoreV1().Pods(pod.Namespace).Patch(t.Context(), pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatalf("fail rank 1: %v", err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			client, ns := newClient(t), newNamespace(t)
			testcluster.DumpOnFailure(t, client, ns)
			job := indexedJob("train", 2, 20*time.Second)
			if _, err := client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			selector := batchv1.JobNameLabel + "=train"
			first := waitRanksRunning(t, client, ns, selector, 2, nil)
			lose(t, client, first[1])
			lost := time.Now()
			second := waitRanksRunning(t, client, ns, selector, 2, map[types.UID]bool{first[1].UID: true})
			t.Logf("rank 1 lost: a new rank 1 (%s) runs %s later; rank 0 is pod %s before and after",
				second[1].Name, time.Since(lost).Round(100*time.Millisecond), second[0].UID)
			if second[0].UID != first[0].UID {
				t.Fatalf("rank 0 was restarted (pod %s, then %s): the Indexed Job restarted the other rank after all; revisit docs/format.md §2.2",
					first[0].UID, second[0].UID)
			}
		})
	}
}

// indexedJob is an Indexed Job of n ranks that run for runFor, with the best for a lost rank
// that the Job API offers: a disrupted pod does not count and is replaced, a failed one is
// retried in its index.
func indexedJob(name string, n int32, runFor time.Duration) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			CompletionMode:       new(batchv1.IndexedCompletion),
			Completions:          new(n),
			Parallelism:          new(n),
			BackoffLimitPerIndex: new(int32(2)),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "registry.example/never-pulled:latest"}},
			}},
		},
	}
	testcluster.RunFor(&job.Spec.Template, runFor)
	return job
}

// waitRanksRunning waits until the pods of selector include a Running pod for each of n
// completion indexes, none of them in gone, and returns them by index.
func waitRanksRunning(t *testing.T, client kubernetes.Interface, ns, selector string, n int, gone map[types.UID]bool) map[int]*corev1.Pod {
	t.Helper()
	var ranks map[int]*corev1.Pod
	poll(t, fmt.Sprintf("%d running ranks of %s", n, selector), func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		ranks = map[int]*corev1.Pod{}
		for i := range pods.Items {
			p := &pods.Items[i]
			idx, err := strconv.Atoi(p.Labels[batchv1.JobCompletionIndexAnnotation])
			if err != nil || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || gone[p.UID] {
				continue
			}
			ranks[idx] = p
		}
		return len(ranks) == n, nil
	})
	return ranks
}
