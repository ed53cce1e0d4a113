package review

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kueueObj is a Kueue object of the version gpuctl renders.
func kueueObj(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": keys.KueueGroup + "/" + keys.KueueVersion,
		"kind": kind, "metadata": meta, "spec": spec}}
}

// cq is a ClusterQueue with a GPU quota per flavor: "pool=nominal[/borrowingLimit[/lendingLimit]]",
// "-" for a limit not set. Numbers are written as Kueue's quantities, some as numbers.
func cq(name, cohort string, flavors ...string) *unstructured.Unstructured {
	var fl []any
	for _, f := range flavors {
		pool, q, _ := strings.Cut(f, "=")
		parts := strings.Split(q, "/")
		gpu := map[string]any{"name": keys.ResourceGPU, "nominalQuota": parts[0]}
		for i, field := range []string{"borrowingLimit", "lendingLimit"} {
			if len(parts) > i+1 && parts[i+1] != "-" {
				gpu[field] = parts[i+1]
			}
		}
		fl = append(fl, map[string]any{"name": pool, "resources": []any{
			map[string]any{"name": "cpu", "nominalQuota": int64(64)}, gpu}})
	}
	spec := map[string]any{"resourceGroups": []any{map[string]any{
		"coveredResources": []any{"cpu", keys.ResourceGPU}, "flavors": fl}}}
	if cohort != "" {
		spec["cohortName"] = cohort
	}
	return kueueObj("ClusterQueue", "", name, spec)
}

func lq(ns, name, clusterQueue string) *unstructured.Unstructured {
	return kueueObj("LocalQueue", ns, name, map[string]any{"clusterQueue": clusterQueue})
}

// workload is a pod-creating object of kind running pods pods of gpus GPUs each, with labels
// and its pods' nodeSelector.
func workload(kind, ns, name string, pods, gpus int64, labels map[string]any, nodeSelector map[string]any) *unstructured.Unstructured {
	pod := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x",
		"resources": map[string]any{"limits": map[string]any{keys.ResourceGPU: fmt.Sprint(gpus)}}}}}
	if nodeSelector != nil {
		pod["nodeSelector"] = nodeSelector
	}
	spec := map[string]any{"template": map[string]any{"spec": pod}}
	switch kind {
	case "Job":
		spec["parallelism"] = pods
	default:
		spec["replicas"] = pods
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels}, "spec": spec}}
	if kind == "Job" {
		u.SetAPIVersion("batch/v1")
	}
	return u
}

func queueText(l QueueLine) string {
	q := func(q *QueueQuota) string {
		if q == nil {
			return "none"
		}
		s := fmt.Sprint(q.Nominal)
		if q.BorrowingLimit != nil {
			s += fmt.Sprintf(" b%d", *q.BorrowingLimit)
		}
		if q.LendingLimit != nil {
			s += fmt.Sprintf(" l%d", *q.LendingLimit)
		}
		return s + fmt.Sprintf(" +%d", q.Borrowable)
	}
	return fmt.Sprintf("%s/%s %d→%d [%s → %s] %s", l.Team, l.Pool, l.Before, l.After, q(l.QuotaBefore), q(l.QuotaAfter), l.State)
}

// TestComputeQueues: what a queue can borrow in a pool is what the other queues of its
// cohort lend there, at most its borrowing limit; workloads count in the queue of their
// LocalQueue, in the pool of their label or node selector.
func TestComputeQueues(t *testing.T) {
	pool := func(p string) map[string]any { return map[string]any{keys.Pool: p} }
	cases := map[string]struct {
		base, head []*unstructured.Unstructured
		want       []string
	}{
		"the cohort lends what its other queues lend, at most the borrowing limit": {
			head: []*unstructured.Unstructured{
				cq("a", "c", "p=8/6"), cq("b", "c", "p=4/-/3"), cq("x", "c", "p=10/-/20"), cq("solo", "", "p=2"), cq("other", "d", "p=100"),
				lq("a", "default", "a"),
				workload("Job", "a", "j", 2, 7, pool("p"), nil),
			},
			want: []string{
				"a/p 0→14 [none → 8 b6 +6] borrows", // b lends 3, x all 10 (its limit above its quota): 13, at most 6
				"b/p 0→0 [none → 4 l3 +18] fits",    // a lends 8, x 10
				"other/p 0→0 [none → 100 +0] fits",  // alone in its cohort
				"solo/p 0→0 [none → 2 +0] fits",     // no cohort: borrows nothing
				"x/p 0→0 [none → 10 l20 +11] fits",
			},
		},
		"over the quota and all it can borrow": {
			head: []*unstructured.Unstructured{cq("a", "c", "p=4"), cq("b", "c", "p=4/-/2"), lq("a", "default", "a"),
				workload("Deployment", "a", "web", 7, 1, pool("p"), nil)},
			want: []string{"a/p 0→7 [none → 4 +2] overLimit", "b/p 0→0 [none → 4 l2 +4] fits"},
		},
		"pool from the node selector; default pool; a flavor the queue lacks": {
			head: []*unstructured.Unstructured{cq("a", "", "p=4", "default=1"), lq("a", "default", "a"),
				workload("Job", "a", "sel", 1, 2, nil, map[string]any{keys.Pool: "p"}),
				workload("Job", "a", "none", 1, 1, nil, nil),
				workload("Job", "a", "q", 1, 1, pool("gone"), nil)},
			want: []string{"a/default 0→1 [none → 1 +0] fits", "a/gone 0→1 [none → 0 +0] overLimit", "a/p 0→2 [none → 4 +0] fits"},
		},
		"the queue-name label; a LocalQueue of a ClusterQueue not in the revision; not queued": {
			head: []*unstructured.Unstructured{cq("a", "", "p=4"), cq("fast", "", "p=2"), lq("a", "default", "a"), lq("a", "fast", "fast"), lq("z", "default", "gone"),
				workload("Job", "a", "f", 1, 2, map[string]any{keys.Pool: "p", keys.KueueQueueName: "fast"}, nil),
				workload("Job", "z", "lost", 1, 1, pool("p"), nil),
				workload("Job", "n", "free", 1, 8, pool("p"), nil)},
			want: []string{"a/p 0→0 [none → 4 +0] fits", "fast/p 0→2 [none → 2 +0] fits", "gone/p 0→1 [none → none] overLimit"},
		},
		"quota and requests before and after; a queue removed": {
			base: []*unstructured.Unstructured{cq("a", "c", "p=4/2"), cq("b", "c", "p=4"), lq("a", "default", "a"), workload("Job", "a", "j", 1, 4, pool("p"), nil)},
			head: []*unstructured.Unstructured{cq("a", "c", "p=8"), lq("a", "default", "a"), workload("Job", "a", "j", 1, 6, pool("p"), nil)},
			want: []string{"a/p 4→6 [4 b2 +2 → 8 +0] fits", "b/p 0→0 [4 +4 → none] fits"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, l := range computeQueues(tc.base, tc.head, map[string]*TeamBudget{}) {
				got = append(got, queueText(l))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestCheckQueues: a workload fails the quota rule only when its queue can never admit it
// at once — a Job and a StatefulSet all their pods together, a Deployment pod by pod; going
// over the quota (borrowing, waiting) is no violation.
func TestCheckQueues(t *testing.T) {
	p := map[string]any{keys.Pool: "p"}
	objs := []*unstructured.Unstructured{cq("a", "c", "p=8/4"), cq("b", "c", "p=16"), lq("a", "default", "a"),
		workload("Job", "a", "fits-borrowing", 3, 4, p, nil),    // 12 = 8 + 4: borrows
		workload("Job", "a", "too-big", 13, 1, p, nil),          // 13 > 12
		workload("StatefulSet", "a", "gang", 2, 8, p, nil),      // 16 > 12
		workload("Deployment", "a", "many-pods", 20, 2, p, nil), // 2 a pod: waits, never too big
		workload("Job", "n", "not-queued", 1, 99, p, nil),
	}
	var got []string
	for _, v := range Check(nil, &Rendered{Objects: objs}) {
		got = append(got, fmt.Sprintf("%s %s: %s", v.Rule, v.Severity, v.Message))
	}
	want := []string{
		"quota error: Job a/too-big requests 13 GPUs at once in pool p, and its queue a can admit at most 12 there (quota 8 + up to 4 borrowed from the cohort): Kueue would never admit it",
		"quota error: StatefulSet a/gang requests 16 GPUs at once in pool p, and its queue a can admit at most 12 there (quota 8 + up to 4 borrowed from the cohort): Kueue would never admit it",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
