package queueing

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// TestOrderedAdmission: 12 jobs of 4 GPUs wait in team ord's queue while its quota is 0 — no
// pod is created, `gpuctl get jobs -o wide` shows each one's place — and, once a commit gives
// the team 8 GPUs, they run two at a time in priority order, then in the order they were
// committed; no pod is ever refused.
func TestOrderedAdmission(t *testing.T) {
	client, dyn := clients(t)
	r := newRepo(t)
	const ns = "ord"
	// One commit of 10 jobs: 2 high, 6 medium, 2 low; then a later commit of 2 more medium.
	groups := [][]string{{"o03", "o07"}, {"o02", "o04", "o06", "o08", "o09", "o10"}, {"m11", "m12"}, {"o01", "o05"}}
	priority := map[string]string{}
	for i, g := range groups {
		for _, name := range g {
			priority[name] = []string{"high", "medium", "medium", "low"}[i]
		}
	}
	for _, name := range slices.Concat(groups[0], groups[1], groups[3]) {
		r.training(ns, name, priority[name], 4, 1)
	}
	r.sync()
	waitQueued(t, ns, 10)
	// Kueue orders by creation time at a resolution of a second: the second commit comes in a
	// later second than the first.
	time.Sleep(1100 * time.Millisecond)
	for _, name := range groups[2] {
		r.training(ns, name, priority[name], 4, 1)
	}
	r.sync()
	waitQueued(t, ns, 12)

	out, errOut, code := gpuctl(t, "get", "jobs", "-n", ns, "-o", "wide")
	if code != 0 {
		t.Fatalf("get jobs: exit %d\n%s", code, errOut)
	}
	place := regexp.MustCompile(`\bord #(\d+)\b`)
	first := 1
	for _, g := range groups {
		var got []int
		for _, name := range g {
			line := lineOf(out, name)
			m := place.FindStringSubmatch(line)
			if m == nil || !strings.Contains(line, "Queued") {
				t.Fatalf("get jobs -o wide: no queue place for %s:\n%s", name, out)
			}
			n, _ := strconv.Atoi(m[1])
			got = append(got, n)
		}
		slices.Sort(got)
		want := make([]int, len(g))
		for i := range want {
			want[i] = first + i
		}
		if !slices.Equal(got, want) {
			t.Errorf("places of %v = %v, want %v (priority, then commit order):\n%s", g, got, want, out)
		}
		first += len(g)
	}

	// Watch the Workloads while the commit that gives the team 8 GPUs is synced.
	list, err := dyn.Resource(workloadsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := dyn.Resource(workloadsGVR).Namespace(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r.edit("quotas/teams.yaml", "  ord:\n    cpu: 64\n    memory: 256Gi\n    gpu: 0\n", "  ord:\n    cpu: 64\n    memory: 256Gi\n    gpu: 8\n")
	r.sync()

	var order []string // jobs in the order their quota was reserved
	holding := map[string]bool{}
	most := 0
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for finished := map[string]bool{}; len(finished) < 12; {
		var ev watch.Event
		select {
		case ev = <-w.ResultChan():
		case <-ctx.Done():
			t.Fatalf("the queue did not drain: admitted %v, finished %d", order, len(finished))
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("watch: %v", ev.Object)
		}
		wl := workloadOf(u)
		switch {
		case wl.finished:
			finished[wl.job] = true
			delete(holding, wl.job)
		case wl.reserved && !holding[wl.job]:
			holding[wl.job] = true
			if !slices.Contains(order, wl.job) {
				order = append(order, wl.job)
			}
		}
		most = max(most, len(holding))
	}
	if most != 2 {
		t.Errorf("at most %d jobs of 4 GPUs held quota at once, want 2 (8 GPUs)", most)
	}
	rank := map[string]int{}
	for i, g := range groups {
		for _, name := range g {
			rank[name] = i
		}
	}
	for i := 1; i < len(order); i++ {
		if rank[order[i]] < rank[order[i-1]] {
			t.Errorf("admission order %v: %s (%s) after %s (%s)", order, order[i], priority[order[i]], order[i-1], priority[order[i-1]])
			break
		}
	}
	noQuotaRefusals(t, client, ns)
	r.emptyTeam(ns)
}

// TestMultiNodeJobIsAdmittedWhole: a 2-node × 8-GPU job of team gang (16 GPUs in
// training-pool) while a 4-GPU job of the team of a higher priority runs: 12 GPUs are free, and the multi-node job
// starts no pod until all 16 are; then both of its pods start.
func TestMultiNodeJobIsAdmittedWhole(t *testing.T) {
	client, dyn := clients(t)
	r := newRepo(t)
	const ns = "gang"
	r.plainJob(ns, "small", 4, 8*time.Second, "gpuctl-high")
	r.sync()
	poll(t, "the 4-GPU job to hold its quota", func(ctx context.Context) (bool, error) {
		ws, err := workloads(ctx, dyn, ns)
		return ws["small"].reserved, err
	})
	r.training(ns, "wide", "medium", 8, 2)
	r.sync()
	poll(t, "the multi-node job to wait", func(ctx context.Context) (bool, error) {
		ws, err := workloads(ctx, dyn, ns)
		wl, ok := ws["wide"]
		return ok && !wl.reserved && wl.message != "", err
	})
	// While the small job (of a higher priority: it is not preempted) runs, the multi-node
	// job has no pod.
	for {
		ws, err := workloads(t.Context(), dyn, ns)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := podsOf(t.Context(), client, ns, "wide")
		if err != nil {
			t.Fatal(err)
		}
		small := ws["small"]
		if !small.reserved || small.finished || small.preempted {
			break
		}
		if len(pods) > 0 {
			t.Fatalf("the multi-node job has %d pod(s) while 4 of 16 GPUs are taken", len(pods))
		}
		time.Sleep(100 * time.Millisecond)
	}
	poll(t, "both pods of the multi-node job to run", func(ctx context.Context) (bool, error) {
		pods, err := podsOf(ctx, client, ns, "wide")
		return len(pods) == 2, err
	})
	noQuotaRefusals(t, client, ns)
	r.emptyTeam(ns)
}

// TestBorrowingAndReclaim: team bob is idle, so alice's jobs borrow its GPUs (16 running on a
// quota of 8); bob's new job takes them back by preempting one of alice's and runs; the
// preempted job waits again in alice's queue, and `gpuctl describe job` says by what.
func TestBorrowingAndReclaim(t *testing.T) {
	client, dyn := clients(t)
	r := newRepo(t)
	for i := 1; i <= 4; i++ {
		r.plainJob("alice", fmt.Sprintf("a%d", i), 4, time.Minute, "")
	}
	r.sync()
	poll(t, "alice's 4 jobs to hold quota (8 of her own, 8 borrowed)", func(ctx context.Context) (bool, error) {
		ws, err := workloads(ctx, dyn, "alice")
		n := 0
		for _, wl := range ws {
			if wl.reserved {
				n++
			}
		}
		return n == 4, err
	})
	poll(t, "ClusterQueue alice to report 8 GPUs borrowed", func(context.Context) (bool, error) {
		return borrowedGPUs(t, "alice") == "8", nil
	})
	r.plainJob("bob", "b1", 4, 20*time.Second, "")
	r.sync()
	synced := time.Now()
	var ws map[string]workload
	poll(t, "bob's job to run on the GPUs it lent, one of alice's to wait again", func(ctx context.Context) (bool, error) {
		bob, err := workloads(ctx, dyn, "bob")
		if err != nil {
			return false, err
		}
		ws, err = workloads(ctx, dyn, "alice")
		waiting := 0
		for _, wl := range ws {
			if !wl.reserved {
				waiting++
			}
		}
		return bob["b1"].reserved && waiting == 1, err
	})
	t.Logf("bob's job ran %s after its sync", time.Since(synced).Round(time.Millisecond))
	var preempted []string
	for job, wl := range ws {
		if wl.preempted {
			preempted = append(preempted, job)
		}
	}
	if len(preempted) != 1 {
		t.Fatalf("alice's preempted jobs: %v, want one", preempted)
	}
	noQuotaRefusals(t, client, "alice")
	noQuotaRefusals(t, client, "bob")
	r.emptyTeam("alice")
	r.emptyTeam("bob")
}

// waitQueued waits until the namespace has n Workloads, none holding quota, and no pod.
func waitQueued(t *testing.T, ns string, n int) {
	t.Helper()
	client, dyn := clients(t)
	poll(t, fmt.Sprintf("%d queued jobs in %s", n, ns), func(ctx context.Context) (bool, error) {
		ws, err := workloads(ctx, dyn, ns)
		if err != nil {
			return false, err
		}
		for job, wl := range ws {
			if wl.reserved {
				t.Fatalf("job %s holds quota of a team with none", job)
			}
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(pods.Items) > 0 {
			t.Fatalf("a queued job has pod %s", pods.Items[0].Name)
		}
		return len(ws) == n, nil
	})
}

// lineOf returns the first line of a table that holds the word.
func lineOf(table, word string) string {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(word) + `\b`)
	for line := range strings.SplitSeq(table, "\n") {
		if re.MatchString(line) {
			return line
		}
	}
	return ""
}

// borrowedGPUs is what the team's ClusterQueue borrows of nvidia.com/gpu in training-pool
// (status.flavorsReservation).
func borrowedGPUs(t *testing.T, team string) string {
	t.Helper()
	_, dyn := clients(t)
	cq, err := dyn.Resource(workloadsGVR.GroupVersion().WithResource("clusterqueues")).Get(t.Context(), team, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flavors, _, _ := unstructured.NestedSlice(cq.Object, "status", "flavorsReservation")
	for _, f := range flavors {
		f, _ := f.(map[string]any)
		if f["name"] != "training-pool" {
			continue
		}
		res, _ := f["resources"].([]any)
		for _, r := range res {
			r, _ := r.(map[string]any)
			if r["name"] == "nvidia.com/gpu" {
				b, _ := r["borrowed"].(string)
				return b
			}
		}
	}
	return ""
}

// TestTeamCannotSkipItsQueue: a team whose queue has no quota writes a Job that asks to run
// (suspend: false, no queue label), one that names its queue and asks the same, a bare Pod
// with a GPU and an inference service with a GPU. All wait in the team's queue, and syncs after
// that do not start them either: no pod of the Jobs exists, and the pods of the Pod and of the
// service's Deployment wait behind Kueue's scheduling gate, never scheduled; `gpuctl get jobs`
// calls the service Queued.
func TestTeamCannotSkipItsQueue(t *testing.T) {
	client, _ := clients(t)
	r := newRepo(t)
	const ns = "ord" // quota 0, no borrowing
	job := func(name, labels string) string {
		return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  labels: %s
spec:
  suspend: false
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {g8s.host/pool: training-pool}
      containers:
        - name: main
          image: registry.example.com/train:v1
          resources: {limits: {nvidia.com/gpu: 1}}
`, name, labels)
	}
	r.write("teams/ord/unlabelled.yaml", job("unlabelled", "{}"))
	r.write("teams/ord/labelled.yaml", job("labelled", "{"+keys.KueueQueueName+": default}"))
	r.write("teams/ord/pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: bare
spec:
  restartPolicy: Never
  nodeSelector: {g8s.host/pool: training-pool}
  containers:
    - name: main
      image: registry.example.com/train:v1
      resources: {limits: {nvidia.com/gpu: 1}}
`)
	r.write("teams/ord/web.yaml", `kind: inference
version: v0.1
job: {name: web}
environment: {image: registry.example.com/vllm:v1}
service: {port: 8000}
resources: {pool: training-pool, gpu: 1}
`)
	for range 3 {
		r.sync()
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			for _, name := range []string{"unlabelled", "labelled"} {
				pods, err := podsOf(t.Context(), client, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				if len(pods) > 0 {
					t.Fatalf("job %s of a team without quota has pod %s", name, pods[0].Name)
				}
			}
			pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, pod := range pods.Items {
				if pod.Spec.NodeName != "" || len(pod.Spec.SchedulingGates) == 0 {
					t.Fatalf("pod %s of a team without quota is on node %q with gates %v", pod.Name, pod.Spec.NodeName, pod.Spec.SchedulingGates)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		r.edit("teams/ord/pod.yaml", "restartPolicy: Never", "restartPolicy: Never\n  # resynced")
	}
	out, errOut, code := gpuctl(t, "get", "jobs", "-n", ns)
	if line := lineOf(out, "web"); code != 0 || !strings.Contains(line, "Queued") {
		t.Errorf("get jobs: the gated service is not Queued: exit %d\n%s%s", code, out, errOut)
	}
	r.emptyTeam(ns)
}
