package daemon

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/notify"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// fullJob is a failed training Job as the API server returns it: labels, annotations,
// managedFields, a pod template with its image, command and environment, and a status.
func fullJob(i int) *batchv1.Job {
	name := fmt.Sprintf("train-%05d", i)
	env := make([]corev1.EnvVar, 8)
	for k := range env {
		env[k] = corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", k), Value: strings.Repeat("v", 24)}
	}
	gpu := resource.MustParse("8")
	now := metav1.Now()
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-" + fmt.Sprint(i%50), UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + i), Generation: 1, CreationTimestamp: now,
			Labels: map[string]string{keys.ManagedBy: keys.ManagedByValue, keys.JobType: "training", keys.Priority: "high", keys.Pool: "gpu-pool", keys.App: name},
			Annotations: map[string]string{keys.Source: "teams/alice/" + name + ".yaml", keys.AppliedHash: strings.Repeat("a", 64),
				keys.SpecDigest: strings.Repeat("d", 64), keys.Description: "a fine-tuning run of the team's model"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: keys.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "batch/v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(strings.Repeat(`{"f:spec":{"f:template":{}}}`, 40))}}}},
		Spec: batchv1.JobSpec{BackoffLimit: new(int32), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{keys.App: name, keys.JobType: "training"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeSelector: map[string]string{keys.GPUType: "h100"},
				Containers: []corev1.Container{{Name: "trainer", Image: "registry.example.com/team/trainer:v1.2.3",
					Command: []string{"python", "-m", "train", "--config", "/etc/train/config.yaml"}, Env: env,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{keys.ResourceGPU: gpu}, Limits: corev1.ResourceList{keys.ResourceGPU: gpu}}}}}}},
		Status: batchv1.JobStatus{StartTime: &now, Failed: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now}}},
	}
}

// TestTrimmedJobs: the informer's transform keeps of a Job its name, namespace, uid, job-type,
// source, resourceVersion and Failed condition (its message on one line, cut to 300
// characters), and of a ResourceQuota its GPUs; 10,000 trimmed failed Jobs take under 512
// bytes of heap each (a typed Job, even emptied, is 1.3 kB).
func TestTrimmedJobs(t *testing.T) {
	j := fullJob(7)
	j.Status.Conditions[1].Message = "line one\nline two " + strings.Repeat("é", 400)
	got, err := trimWatched(j)
	if err != nil {
		t.Fatal(err)
	}
	tj := got.(*watchedJob)
	if tj.name != j.Name || tj.namespace != j.Namespace || tj.uid != j.UID || tj.resourceVersion != j.ResourceVersion ||
		tj.source != "teams/alice/train-00007.yaml" || !tj.failed || tj.failedReason != "BackoffLimitExceeded" {
		t.Fatalf("trimmed Job %+v", tj)
	}
	if m := tj.failedMessage; !strings.HasPrefix(m, "line one line two éé") || len([]rune(m)) != maxJobMessage || !strings.HasSuffix(m, "…") {
		t.Fatalf("failed message %q (%d characters)", m, len([]rune(m)))
	}
	if key, err := cache.MetaNamespaceKeyFunc(tj); err != nil || key != j.Namespace+"/"+j.Name {
		t.Fatalf("the informer's key of a trimmed Job: %q, %v", key, err)
	}
	j.Status.Conditions[1].Status = corev1.ConditionFalse
	if got, _ := trimWatched(j); got.(*watchedJob).failed {
		t.Fatal("a Failed=False condition is a failure")
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "teams", Namespace: "alice", ResourceVersion: "42", ManagedFields: fullJob(1).ManagedFields},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{keys.QuotaRequestsGPU: resource.MustParse("8"), corev1.ResourceRequestsCPU: resource.MustParse("64")},
			Used: corev1.ResourceList{keys.QuotaRequestsGPU: resource.MustParse("8"), corev1.ResourceRequestsCPU: resource.MustParse("12")}}}
	got, _ = trimWatched(q)
	tq := got.(*corev1.ResourceQuota)
	if len(tq.Status.Hard) != 1 || len(tq.Status.Used) != 1 || tq.ManagedFields != nil || tq.ResourceVersion != q.ResourceVersion ||
		tq.Status.Used.Name(keys.QuotaRequestsGPU, resource.DecimalSI).Value() != 8 {
		t.Fatalf("trimmed quota %+v", tq)
	}

	const n = 10000
	kept := make([]any, n)
	before := heapInUse()
	for i := range n {
		kept[i], _ = trimWatched(fullJob(i)) // the full Job is garbage once trimmed
	}
	after := heapInUse()
	runtime.KeepAlive(kept)
	per := (after - before) / n
	t.Logf("%d trimmed Jobs: %d bytes of heap each", n, per)
	if per > 512 {
		t.Errorf("a trimmed Job takes %d bytes of heap, want at most 512", per)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// sendFunc is a notify.Sender that calls itself.
type sendFunc func(notify.Event)

func (f sendFunc) Send(e notify.Event) { f(e) }

// TestTrimmedClusterQueue: of a ClusterQueue the informer keeps its GPUs summed over its
// flavors (nominalQuota as a string or a number; CPU and memory left out), and what its
// workloads reserve; a team that borrows beyond its quota is told so, once, and freed once.
func TestTrimmedClusterQueue(t *testing.T) {
	flavor := func(name string, gpu any) map[string]any {
		return map[string]any{"name": name, "resources": []any{
			map[string]any{"name": "cpu", "nominalQuota": "64"},
			map[string]any{"name": keys.ResourceGPU, "nominalQuota": gpu}}}
	}
	used := func(name string, gpu string) map[string]any {
		return map[string]any{"name": name, "resources": []any{
			map[string]any{"name": "cpu", "total": "12"}, map[string]any{"name": keys.ResourceGPU, "total": gpu, "borrowed": "0"}}}
	}
	cq := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "alice", "resourceVersion": "7"},
		"spec":   map[string]any{"resourceGroups": []any{map[string]any{"flavors": []any{flavor("a100", "4"), flavor("h100", int64(4))}}}},
		"status": map[string]any{"flavorsReservation": []any{used("a100", "4"), used("h100", "6")}}}}
	got, _ := trimClusterQueueObject(cq)
	q := got.(*watchedQueue)
	if q.name != "alice" || q.resourceVersion != "7" || q.nominal.Value() != 8 || q.reserved.Value() != 10 {
		t.Fatalf("trimmed ClusterQueue %+v", q)
	}
	var alerts []notify.Event
	w := &jobWatch{d: &Daemon{opts: Options{Alerts: sendFunc(func(e notify.Event) { alerts = append(alerts, e) })}}, queueReached: map[string]bool{}}
	w.queueSeen(q)
	w.queueSeen(q) // a later update, still full: nothing more
	q.reserved = resource.MustParse("3")
	w.queueSeen(q)
	if len(alerts) != 2 || alerts[0].Message != "team alice reserves 10 GPUs, over its quota of 8 (borrowed from the cohort): new jobs queue" ||
		alerts[0].Object != "ClusterQueue alice" || alerts[1].Reason != notify.QuotaFreed || alerts[1].Message != "team alice reserves 3 of its 8 GPUs" {
		t.Fatalf("alerts %+v", alerts)
	}
}

// TestJobFailedNamesTheWorker: the JobFailed of a manager cluster's Job that MultiKueue ran in
// a worker (spec.managedBy) says where it ran, from its Workload's status.clusterName; a Job
// without such a Workload says nothing of it.
func TestJobFailedNamesTheWorker(t *testing.T) {
	j := fullJob(3)
	j.Spec.ManagedBy = new(keys.MultiKueueManager)
	wl := &unstructured.Unstructured{Object: map[string]any{"apiVersion": keys.KueueGroup + "/" + keys.KueueVersion, "kind": "Workload",
		"metadata": map[string]any{"name": "job-" + j.Name + "-1a2b3", "namespace": j.Namespace,
			"ownerReferences": []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": j.Name, "uid": string(j.UID)}}},
		"status": map[string]any{"clusterName": "gpu-b"}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{workloadsGVR: "WorkloadList"}, wl)
	var alerts []notify.Event
	w := &jobWatch{d: &Daemon{opts: Options{Dynamic: dyn, Alerts: sendFunc(func(e notify.Event) { alerts = append(alerts, e) })}}, ctx: t.Context()}
	w.jobFailed(trimJob(j))
	if len(alerts) != 1 || alerts[0].Message != j.Name+" failed: BackoffLimitExceeded: Job has reached the specified backoff limit (ran on cluster gpu-b)" {
		t.Fatalf("alerts %+v", alerts)
	}
	other := fullJob(4)
	other.Spec.ManagedBy = new(keys.MultiKueueManager)
	w.jobFailed(trimJob(other))
	if len(alerts) != 2 || strings.Contains(alerts[1].Message, "(") {
		t.Fatalf("alerts %+v", alerts)
	}
}

// TestMultiKueueCopyFailure: in a MultiKueue worker (its last render says so), a failed Job
// with MultiKueue's labels is the manager's copy: no JobFailed, and none resolved when it goes
// (the manager tells of the job). In a cluster that is no worker the labels are a claim that
// anyone with kubectl can make: the Job's failure is told, and closed when it is deleted.
func TestMultiKueueCopyFailure(t *testing.T) {
	j := fullJob(5)
	j.Labels[keys.MultiKueueOrigin], j.Labels[keys.KueuePrebuiltWorkload] = "multikueue", "job-"+j.Name+"-1a2b3"
	for _, worker := range []bool{true, false} {
		var alerts []notify.Event
		d := &Daemon{opts: Options{Store: NewStore(fake.NewClientset(), "gpuctl-system"), Alerts: sendFunc(func(e notify.Event) { alerts = append(alerts, e) })}}
		d.multiKueueWorker.Store(worker)
		w := &jobWatch{d: d, ctx: t.Context()}
		w.jobAdded(trimJob(j), false)
		w.jobDeleted(trimJob(j))
		switch {
		case worker && len(alerts) != 0:
			t.Errorf("in a worker, the copy's failure and delete sent %+v", alerts)
		case !worker && (len(alerts) != 2 || alerts[0].Reason != notify.JobFailed || alerts[0].Resolved || !alerts[1].Resolved ||
			alerts[0].Key != jobKey(j.Namespace, j.Name) || alerts[1].Key != alerts[0].Key):
			t.Errorf("outside a worker, the labelled Job's failure and delete sent %+v, want a JobFailed and its resolution", alerts)
		}
	}
}
