package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// multiKueueJob is the manager cluster's Job of a training that MultiKueue dispatches
// (spec.managedBy), unsuspended, with the status MultiKueue copied from the worker's copy.
func multiKueueJob(name string, st batchv1.JobStatus) workload {
	w := trainingWorkload("alice", name)
	j := w.job.DeepCopy()
	j.Spec.Suspend = new(false)
	j.Spec.ManagedBy = new(keys.MultiKueueManager)
	j.Status = st
	return fromJob(j)
}

// dispatched sets MultiKueue's status of a manager's Workload: the worker that runs it, or the
// workers it was sent to.
func dispatched(u *unstructured.Unstructured, cluster string, nominated ...string) *unstructured.Unstructured {
	st := u.Object["status"].(map[string]any)
	if cluster != "" {
		st["clusterName"] = cluster
	}
	if len(nominated) > 0 {
		var ns []any
		for _, n := range nominated {
			ns = append(ns, n)
		}
		st["nominatedClusterNames"] = ns
	}
	return u
}

// A job that MultiKueue runs in a worker cluster has no pod in the manager: its one row shows
// the status MultiKueue copied (Running), and its queue state the worker (Cluster); before the
// copy, it is pending and says where it runs; while no worker has admitted it, the clusters it
// was sent to. A worker's copy (its origin label) has the manager's origin; other jobs have
// neither.
func TestMultiKueueQueueState(t *testing.T) {
	reserved := func(name string) *unstructured.Unstructured {
		return testWorkload("alice", name, 0, t0, 1, "4", "1", cond("QuotaReserved", "True", "QuotaReserved", "", t0),
			cond("Admitted", "False", "NoChecks", "", t0))
	}
	wls := []*unstructured.Unstructured{
		dispatched(admitted(testWorkload("alice", "runs", 0, t0, 1, "4", "1"), "alice", "training-pool"), "gpu-b"),
		dispatched(admitted(testWorkload("alice", "copying", 0, t0, 1, "4", "1"), "alice", "training-pool"), "gpu-b"),
		dispatched(reserved("sent"), "", "gpu-a", "gpu-b"),
		admitted(testWorkload("alice", "copy", 0, t0, 1, "4", "1"), "alice", "training-pool"),
		admitted(testWorkload("alice", "local", 0, t0, 1, "4", "1"), "alice", "training-pool"),
	}
	copyJob := trainingWorkload("alice", "copy")
	copyJob.meta.Labels[keys.MultiKueueOrigin] = "multikueue"
	copyJob.status, copyJob.suspend = StatusRunning, false
	local := trainingWorkload("alice", "local")
	local.status, local.suspend = StatusRunning, false
	ws := []workload{
		multiKueueJob("runs", batchv1.JobStatus{Active: 1, Ready: new(int32(1)), StartTime: &metav1.Time{Time: t0}}),
		multiKueueJob("copying", batchv1.JobStatus{}),
		trainingWorkload("alice", "sent"), // still suspended: no worker admitted it
		copyJob, local,
	}
	if !ws[0].multiKueue || ws[3].multiKueue {
		t.Fatalf("spec.managedBy not read: %v %v", ws[0].multiKueue, ws[3].multiKueue)
	}
	newQueues(wls, nil).attach(ws, nil)
	rows := jobPodRows(ws, nil, JobPodFilter{}, histories{}).Items
	byName := map[string]JobPod{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	if r := byName["runs"]; r.Pod != "" || r.Status != StatusRunning || r.JobStatus != StatusRunning || r.Reason != "" ||
		r.Queue.Worker() != "gpu-b" || r.Queue.Origin != "" || r.Queue.Summary() != "admitted to training-pool in alice; runs on cluster gpu-b (MultiKueue)" {
		t.Errorf("the dispatched job's row: %+v, queue %+v", r, r.Queue)
	}
	if d := detail(ws[0]); d.Queue.Worker() != "gpu-b" || d.StartedAt == nil || summarize(ws[0]).Queue.Worker() != "gpu-b" {
		t.Errorf("the detail and the summary read the worker from the same queue state: %+v", d.Queue)
	}
	if r := byName["copying"]; r.Status != StatusPending || r.Reason != "admitted to training-pool in alice; runs on cluster gpu-b (MultiKueue)" {
		t.Errorf("before MultiKueue copies the status: %q (%s)", r.Reason, r.Status)
	}
	if r := byName["sent"]; r.Status != StatusPending || r.Queue.Worker() != "" || !slices.Equal(r.Queue.Nominated, []string{"gpu-a", "gpu-b"}) ||
		r.Reason != "quota reserved in - in alice; sent to gpu-a, gpu-b by MultiKueue, admitted by none yet" {
		t.Errorf("sent to two workers: %q, %+v", r.Reason, r.Queue)
	}
	if r := byName["copy"]; r.Queue.Origin != "multikueue" || r.Queue.Worker() != "" || r.Queue.Dispatch() != "" {
		t.Errorf("the worker's copy: %+v", r.Queue)
	}
	if r := byName["local"]; r.Queue.Origin != "" || r.Queue.Worker() != "" || r.Queue.Dispatch() != "" {
		t.Errorf("a job of this cluster: %+v", r.Queue)
	}
	if (*QueueState)(nil).Worker() != "" || (*QueueState)(nil).Dispatch() != "" {
		t.Error("no queue state, no worker")
	}
}

// A MultiKueue Job's pods and events are in its worker: its reason needs no history here, and a
// failure its Job does not explain names the worker rather than "no pod or event is left".
func TestMultiKueueReason(t *testing.T) {
	w := multiKueueJob("sft", batchv1.JobStatus{Active: 1, StartTime: &metav1.Time{Time: t0.Add(-time.Hour)}})
	if needsHistory(w, nil) {
		t.Error("a MultiKueue Job without pods here needs the events of its pods")
	}
	if plain := trainingWorkload("alice", "plain"); plain.multiKueue {
		t.Error("a Job without spec.managedBy is MultiKueue's")
	}
	failed := workloadView{Object: "Job", Status: StatusFailed, Failed: 1, Queue: &QueueState{State: QueueFinished, Cluster: "gpu-b"}}
	if got := jobReason(failed, nil); got != "failed on cluster gpu-b (MultiKueue), where its pods and events are" {
		t.Errorf("a failed MultiKueue job: %q", got)
	}
	failed.FailedReason = batchv1.JobReasonBackoffLimitExceeded
	if got := jobReason(failed, nil); got != "BackoffLimitExceeded after 1 attempt" {
		t.Errorf("what the copied Job says comes first: %q", got)
	}
}
