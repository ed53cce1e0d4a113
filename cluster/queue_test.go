package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// t0 is the time of the tests' objects.
var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// cond is a Workload condition as Kueue writes it.
func cond(typ, status, reason, message string, at time.Time) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": at.Format(time.RFC3339)}
}

// testWorkload is a Workload in namespace ns owned by a Job (uid "job-<name>"), of one pod set
// of count pods with gpus GPUs and cpu each, with the priority, created at created.
func testWorkload(ns, name string, priority int64, created time.Time, count int64, gpus, cpu string, conds ...map[string]any) *unstructured.Unstructured {
	var cs []any
	for _, c := range conds {
		cs = append(cs, c)
	}
	requests := map[string]any{"cpu": cpu}
	if gpus != "" {
		requests[keys.ResourceGPU] = gpus
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": keys.KueueGroup + "/" + keys.KueueVersion, "kind": "Workload",
		"metadata": map[string]any{"name": "job-" + name + "-abcde", "namespace": ns, "uid": "wl-" + name,
			"creationTimestamp": created.Format(time.RFC3339),
			"ownerReferences":   []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": "job-" + name}}},
		"spec": map[string]any{"queueName": keys.KueueLocalQueue, "priority": priority,
			"priorityClassRef": map[string]any{"group": keys.KueueGroup, "kind": "WorkloadPriorityClass", "name": "gpuctl-medium"},
			"podSets": []any{map[string]any{"name": "main", "count": count, "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "main", "resources": map[string]any{"requests": requests}}}}}}}},
		"status": map[string]any{"conditions": cs},
	}}
}

// admitted is what Kueue writes on admission to a flavor: the pod set's requests times its
// count as the resource usage.
func admitted(u *unstructured.Unstructured, cq, flavor string) *unstructured.Unstructured {
	st := u.Object["status"].(map[string]any)
	st["conditions"] = append(st["conditions"].([]any), cond("QuotaReserved", "True", "QuotaReserved", "", t0),
		cond("Admitted", "True", "Admitted", "", t0.Add(time.Second)))
	usage := map[string]any{}
	ps := u.Object["spec"].(map[string]any)["podSets"].([]any)[0].(map[string]any)
	containers := ps["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	for res, v := range containers[0].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any) {
		q := resource.MustParse(v.(string))
		q.Mul(ps["count"].(int64))
		usage[res] = q.String()
	}
	st["admission"] = map[string]any{"clusterQueue": cq, "podSetAssignments": []any{map[string]any{"name": "main",
		"flavors": map[string]any{keys.ResourceGPU: flavor, "cpu": flavor}, "resourceUsage": usage}}}
	return u
}

// quota is one resource's nominal quota (and lending limit, "" for none), reservation and
// borrowed amount in a flavor.
type quota struct{ res, nominal, lending, total, borrowed string }

// testClusterQueue is a ClusterQueue of the cohort gpuctl with quotas in one flavor.
func testClusterQueue(name, flavor string, quotas ...quota) *unstructured.Unstructured {
	var res, usage []any
	for _, q := range quotas {
		r := map[string]any{"name": q.res, "nominalQuota": q.nominal}
		if q.lending != "" {
			r["lendingLimit"] = q.lending
		}
		res = append(res, r)
		usage = append(usage, map[string]any{"name": q.res, "total": q.total, "borrowed": q.borrowed})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": keys.KueueGroup + "/" + keys.KueueVersion, "kind": "ClusterQueue",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"cohortName": keys.KueueCohort, "resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", keys.ResourceGPU}, "flavors": []any{map[string]any{"name": flavor, "resources": res}}}}},
		"status": map[string]any{"flavorsReservation": []any{map[string]any{"name": flavor, "resources": usage}}},
	}}
}

// trainingWorkload is the gpuctl workload of a training Job in pool training-pool with GPU
// type a100-80g.
func trainingWorkload(ns, name string) workload {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("job-" + name),
		Labels: map[string]string{keys.JobType: "training", keys.Pool: "training-pool"}}}
	j.Spec.Template.Spec.NodeSelector = map[string]string{keys.GPUType: "a100-80g"}
	suspend := true
	j.Spec.Suspend = &suspend
	return fromJob(j)
}

// Kueue's BestEffortFIFO order: higher priority first, then the older; an eviction for a
// PodsReady timeout queues the Workload at the eviction's time; a preempted one keeps its
// creation time. Admitted, finished and deactivated Workloads, and those of another team, do
// not count.
func TestQueuePositions(t *testing.T) {
	evictedLate := testWorkload("alice", "timedout", 100, t0, 1, "1", "1",
		cond("Evicted", "True", "PodsReadyTimeout", "timeout", t0.Add(time.Hour)))
	inactive := testWorkload("alice", "inactive", 5000, t0, 1, "1", "1")
	inactive.Object["spec"].(map[string]any)["active"] = false
	wls := []*unstructured.Unstructured{
		testWorkload("alice", "old-low", 100, t0.Add(time.Minute), 1, "4", "1"),
		testWorkload("alice", "new-high", 1000, t0.Add(10*time.Minute), 1, "4", "1"),
		testWorkload("alice", "newer-low", 100, t0.Add(5*time.Minute), 1, "4", "1"),
		testWorkload("alice", "preempted", 100, t0.Add(2*time.Minute), 1, "4", "1",
			cond("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: x, JobUID: y) due to ...", t0.Add(2*time.Hour))),
		evictedLate, inactive,
		admitted(testWorkload("alice", "running", 10000, t0, 1, "4", "1"), "alice", "training-pool"),
		testWorkload("alice", "done", 10000, t0, 1, "4", "1", cond("Finished", "True", "Succeeded", "", t0)),
		testWorkload("bob", "bobs", 10000, t0, 1, "4", "1"),
	}
	q := newQueues(wls, nil)
	want := map[string]int{"new-high": 1, "old-low": 2, "preempted": 3, "newer-low": 4, "timedout": 5,
		"inactive": 0, "running": 0, "done": 0, "bobs": 1}
	for name, pos := range want {
		wl := trainingWorkload(map[bool]string{true: "bob", false: "alice"}[name == "bobs"], name)
		s := q.of(wl.meta.UID, &wl)
		if s == nil {
			t.Fatalf("%s: no queue state", name)
		}
		if s.Position != pos {
			t.Errorf("%s: position %d, want %d", name, s.Position, pos)
		}
		if pos > 0 && s.Pending != map[bool]int{true: 1, false: 5}[name == "bobs"] {
			t.Errorf("%s: %d pending in %s", name, s.Pending, s.ClusterQueue)
		}
	}
	if s := q.of("job-timedout", nil); !s.QueuedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("a Workload evicted for a PodsReady timeout is queued at %v, want its eviction", s.QueuedAt)
	}
}

// The state of a Workload by its conditions.
func TestQueueStates(t *testing.T) {
	tests := map[string]struct {
		wl    *unstructured.Unstructured
		state string
	}{
		"pending": {testWorkload("alice", "a", 0, t0, 1, "1", "1"), QueueQueued},
		"inadmissible": {testWorkload("alice", "a", 0, t0, 1, "1", "1",
			cond("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set main: insufficient unused quota", t0)), QueueQueued},
		"admitted": {admitted(testWorkload("alice", "a", 0, t0, 1, "1", "1"), "alice", "training-pool"), QueueAdmitted},
		"reserved": {testWorkload("alice", "a", 0, t0, 1, "1", "1", cond("QuotaReserved", "True", "QuotaReserved", "", t0),
			cond("Admitted", "False", "NoChecks", "", t0)), QueueReserved},
		"preempted": {testWorkload("alice", "a", 0, t0, 1, "1", "1", cond("Evicted", "True", "Preempted", "", t0),
			cond("Preempted", "True", "InClusterQueue", "", t0)), QueuePreempted},
		"re-admitted after preemption": {admitted(testWorkload("alice", "a", 0, t0, 1, "1", "1",
			cond("Evicted", "False", "QuotaReserved", "", t0), cond("Preempted", "False", "QuotaReserved", "", t0)), "alice", "x"), QueueAdmitted},
		"evicted otherwise": {testWorkload("alice", "a", 0, t0, 1, "1", "1", cond("Evicted", "True", "PodsReadyTimeout", "", t0)), QueueEvicted},
		"finished":          {admitted(testWorkload("alice", "a", 0, t0, 1, "1", "1", cond("Finished", "True", "Succeeded", "", t0)), "alice", "x"), QueueFinished},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			wl := trainingWorkload("alice", "a")
			s := newQueues([]*unstructured.Unstructured{tc.wl}, nil).of(wl.meta.UID, &wl)
			if s == nil || s.State != tc.state {
				t.Fatalf("state %+v, want %s", s, tc.state)
			}
			if name == "inadmissible" && !strings.Contains(s.Message, "insufficient unused quota") {
				t.Errorf("Kueue's message of a waiting job: %q", s.Message)
			}
			if s.State == QueueAdmitted && (len(s.Flavors) != 1 || s.AdmittedAt == nil) {
				t.Errorf("admitted without flavors or time: %+v", s)
			}
		})
	}
}

// What a waiting job waits for: its GPUs in its pool, its team's use and quota there, and
// what the other teams of the cohort could lend (unused nominal quota, capped by lending
// limits, less what is borrowed); the first resource that does not fit is named.
func TestQueueWaitsFor(t *testing.T) {
	cqs := []*unstructured.Unstructured{
		// alice's status has not caught up with her running job yet
		testClusterQueue("alice", "training-pool", quota{keys.ResourceGPU, "8", "", "0", "0"}, quota{"cpu", "64", "", "0", "0"}),
		testClusterQueue("bob", "training-pool", quota{keys.ResourceGPU, "8", "6", "0", "0"}, quota{"cpu", "64", "", "0", "0"}),
		testClusterQueue("carol", "training-pool", quota{keys.ResourceGPU, "4", "", "6", "2"}, quota{"cpu", "64", "", "0", "0"}),
	}
	wls := []*unstructured.Unstructured{
		// alice's use comes from her Workloads that hold quota, not from her ClusterQueue's
		// status, which lags: the running one holds 8 GPUs and 8 CPUs, the finished one nothing.
		admitted(testWorkload("alice", "running", 0, t0, 2, "4", "4"), "alice", "training-pool"),
		admitted(testWorkload("alice", "done", 0, t0, 2, "4", "4", cond("Finished", "True", "Succeeded", "", t0)), "alice", "training-pool"),
		testWorkload("alice", "first", 0, t0, 2, "4", "1"),
		testWorkload("alice", "second", 0, t0.Add(time.Minute), 1, "4", "200"),
	}
	q := newQueues(wls, cqs)
	first := trainingWorkload("alice", "first")
	s := q.of(first.meta.UID, &first)
	// bob lends at most 6, carol nothing (over its quota), and carol's 2 borrowed are taken
	const want = "#1 in alice: waits for 8 × a100-80g in training-pool, team alice at 8/8, cohort lending 4"
	if got := s.Summary(); got != want {
		t.Errorf("summary:\n%s\nwant\n%s", got, want)
	}
	if w := s.WaitsFor; w.Resource != keys.ResourceGPU || w.Cohort != keys.KueueCohort || w.Need != "8" {
		t.Errorf("waits for %+v", w)
	}
	second := trainingWorkload("alice", "second")
	if got := q.of(second.meta.UID, &second).WaitText(); got != "200 cpu in training-pool, team alice at 8/64, cohort lending 128" {
		t.Errorf("a job whose CPU does not fit waits for CPU: %q", got)
	}
	// without the ClusterQueues (not readable), the need alone
	alone := newQueues(wls, nil)
	if got := alone.of(first.meta.UID, &first).WaitText(); got != "8 × a100-80g in training-pool" {
		t.Errorf("without ClusterQueues: %q", got)
	}
	// a job without a GPU type waits for nvidia.com/gpu
	plain := first
	plain.template.Spec.NodeSelector = nil
	if got := q.of(plain.meta.UID, &plain).WaitsFor.Display; got != keys.ResourceGPU {
		t.Errorf("display without a GPU type: %q", got)
	}
}

// A preempted job names its preemptor by the Workload UID in Kueue's message: the job that
// owns it, "another team's job" when it is not among the Workloads read, and a team's scope
// hides a preemptor of another namespace.
func TestQueuePreemptor(t *testing.T) {
	msg := "Preempted to accommodate a workload (UID: wl-big, JobUID: job-big) due to reclamation within the cohort; preemptor path: /gpuctl/bob; preemptee path: /gpuctl/alice"
	victim := testWorkload("alice", "small", 0, t0, 1, "4", "1", cond("Evicted", "True", "Preempted", msg, t0.Add(time.Hour)),
		cond("Preempted", "True", "InCohortReclamation", msg, t0.Add(time.Hour)), cond("QuotaReserved", "False", "Pending", "", t0.Add(time.Hour)))
	big := admitted(testWorkload("bob", "big", 1000, t0, 1, "8", "1"), "bob", "training-pool")
	wl := trainingWorkload("alice", "small")

	q := newQueues([]*unstructured.Unstructured{victim, big}, nil)
	s := q.of(wl.meta.UID, &wl)
	if s.State != QueuePreempted || s.PreemptedBy.JobID != "bob.big" || s.PreemptedBy.Namespace != "bob" {
		t.Fatalf("preempted state %+v by %+v", s, s.PreemptedBy)
	}
	if got := s.Summary(); !strings.HasPrefix(got, "preempted by bob.big (reclamation within the cohort); #1 in alice: waits for 4 × a100-80g") {
		t.Errorf("summary %q", got)
	}
	if q.missesPreemptor() {
		t.Error("the preemptor is among the Workloads, yet missed")
	}

	alone := newQueues([]*unstructured.Unstructured{victim}, nil)
	if !alone.missesPreemptor() {
		t.Error("the preemptor is not among the Workloads, yet not missed")
	}
	if got := alone.of(wl.meta.UID, &wl).PreemptedBy.String(); got != "by another team's job (reclamation within the cohort)" {
		t.Errorf("an unknown preemptor in the cohort: %q", got)
	}

	// the team alice's scope: bob's job is not named, the row's reason follows
	row := JobPod{Namespace: "alice", Status: StatusPreempted, Reason: s.Summary(), Queue: s}
	rows := []JobPod{row}
	Scope(nil, []string{"alice"}).hideRows(rows)
	if p := rows[0].Queue.PreemptedBy; p.JobID != "" || p.Namespace != "" || p.UID != "" ||
		!strings.HasPrefix(rows[0].Reason, "preempted by another team's job (reclamation within the cohort); #1 in alice") {
		t.Errorf("alice's scope shows %+v, reason %q", p, rows[0].Reason)
	}
	if s.PreemptedBy.JobID != "bob.big" {
		t.Error("hiding changed the whole model's state")
	}
	rows = []JobPod{row}
	Scope(nil, []string{"alice", "bob"}).hideRows(rows)
	if rows[0].Queue.PreemptedBy.JobID != "bob.big" {
		t.Errorf("a scope that sees bob hides bob's job: %+v", rows[0].Queue.PreemptedBy)
	}
}

// A suspended Job that Kueue holds back is Queued (or Preempted): its row without pods says
// where it stands; an admitted one keeps its status. Without Kueue nothing changes.
func TestQueueAttach(t *testing.T) {
	wls := []*unstructured.Unstructured{
		testWorkload("alice", "waiting", 0, t0, 1, "4", "1"),
		admitted(testWorkload("alice", "running", 0, t0, 1, "4", "1"), "alice", "training-pool"),
	}
	ws := []workload{trainingWorkload("alice", "waiting"), trainingWorkload("alice", "running"), trainingWorkload("alice", "plain")}
	newQueues(wls, nil).attach(ws, nil)
	rows := jobPodRows(ws, nil, JobPodFilter{}, histories{})
	if r := rows.Items[0]; r.Status != StatusQueued || r.JobStatus != StatusQueued || r.Reason != "#1 in alice: waits for 4 × a100-80g in training-pool" || r.Queue == nil {
		t.Errorf("queued row %+v", r)
	}
	if r := rows.Items[1]; r.Status != StatusPending || r.Queue == nil || r.Queue.State != QueueAdmitted {
		t.Errorf("admitted row %+v", r)
	}
	if r := rows.Items[2]; r.Status != StatusPending || r.Reason != "suspended" || r.Queue != nil {
		t.Errorf("a job without a Workload: %+v", r)
	}
	if !(JobPodFilter{Status: "queued"}).matches(rows.Items[0]) {
		t.Error("--status queued does not select a queued row")
	}
	if d := detail(ws[0]); d.Status != StatusQueued || d.Queue.Position != 1 {
		t.Errorf("detail %+v", d)
	}

	plain := []workload{trainingWorkload("alice", "waiting")}
	(*queues)(nil).attach(plain, nil)
	if plain[0].status != StatusPending || plain[0].queue != nil {
		t.Errorf("without Kueue: %+v", plain[0])
	}
}

// A Deployment's pods each have a Workload (Kueue's pod integration): a gated pod waiting for
// its Workload's admission is Queued, and the job's state is that of its pod first in line.
func TestQueuePodWorkloads(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "alice", UID: types.UID("pod-" + name),
			Labels: map[string]string{keys.App: "web"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	owned := func(u *unstructured.Unstructured, podName string) *unstructured.Unstructured {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: podName, UID: types.UID("pod-" + podName)}})
		return u
	}
	wls := []*unstructured.Unstructured{
		owned(admitted(testWorkload("alice", "w1", 0, t0, 1, "1", "1"), "alice", "default"), "web-1"),
		owned(testWorkload("alice", "w2", 0, t0, 1, "1", "1"), "web-2"),
	}
	web := newWorkload("Deployment", metav1.ObjectMeta{Name: "web", Namespace: "alice", UID: "dep-web",
		Labels: map[string]string{keys.JobType: "inference"}}, corev1.PodTemplateSpec{}, nil, 2)
	web.status = StatusPartiallyRunning
	pods := []*corev1.Pod{pod("web-1"), pod("web-2")}
	ws := []workload{web}
	newQueues(wls, nil).attach(ws, byNamespace(pods))
	if s := ws[0].queue; s == nil || s.State != QueueQueued || s.Position != 1 {
		t.Fatalf("the Deployment's state is its waiting pod's: %+v", s)
	}
	rows := jobPodRows(ws, byNamespace(pods), JobPodFilter{}, histories{}).Items
	if len(rows) != 2 || rows[0].Status != "Pending" || rows[0].Queue.State != QueueAdmitted ||
		rows[1].Status != StatusQueued || !strings.HasPrefix(rows[1].Reason, "#1 in alice: waits for 1 × nvidia.com/gpu in default") {
		t.Errorf("rows %+v", rows)
	}
}
