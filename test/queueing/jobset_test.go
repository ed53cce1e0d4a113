package queueing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/testcluster"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestJobSetQueuedWholeAndRequeued: with queueing kueue and multiNode jobset, a two-node
// training job's JobSet waits in its team's queue and is admitted whole; when a job of a
// higher priority needs its GPUs, Kueue preempts it — the JobSet is suspended and requeued,
// not failed (no FailJob rule of gpuctl's policy fires: the ranks are not disrupted, they are
// removed by the suspension) — and it runs again and completes after.
func TestJobSetQueuedWholeAndRequeued(t *testing.T) {
	client, dyn := clients(t)
	r := newRepo(t)
	const ns = "gang" // 16 GPUs, the whole pool, and neither lends nor borrows
	testcluster.DumpOnFailure(t, client, ns)
	r.edit(".gpuctl.yaml", "queueing: kueue", "queueing: kueue\nmultiNode: jobset")
	r.sync() // the team's namespace and queues

	// gpuctl's JobSet of a two-node job of 8 GPUs a node; created as the sync would, with
	// ranks that kwok keeps Running for 15 s.
	r.training(ns, "wide", "low", 8, 2)
	res, err := render.New(render.Options{}).Render(filesys.MakeFsOnDisk(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	var js *unstructured.Unstructured
	for _, o := range res.Objects {
		switch {
		case o.GetKind() == render.JobSetKind && o.GetName() == "wide":
			js = o
		case o.GetKind() == "PriorityClass": // gpuctl-low, which the ranks name
			_, err := client.SchedulingV1().PriorityClasses().Create(t.Context(), priorityClass(t, o), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
	if js == nil {
		t.Fatal("no JobSet wide rendered")
	}
	if js.GetLabels()["kueue.x-k8s.io/queue-name"] == "" { // Kueue's webhook suspends it when it is created
		t.Fatalf("JobSet wide: labels %v, want it in a queue", js.GetLabels())
	}
	r.remove("teams/" + ns + "/wide.yaml") // the test's copy is the one that runs
	if err := testcluster.RunJobSetFor(js, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	jobsets := dyn.Resource(testcluster.JobSetResource).Namespace(ns)
	if _, err := jobsets.Create(t.Context(), js, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remove := func() {
		bg := metav1.DeletePropagationBackground
		if err := jobsets.Delete(context.Background(), "wide", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	t.Cleanup(remove)
	wideJob := "wide-" + render.JobSetReplicatedJob + "-0"
	poll(t, "the JobSet's Workload to be admitted", func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(workloadsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		for _, u := range list.Items {
			for _, o := range u.GetOwnerReferences() {
				if o.Kind == render.JobSetKind && o.Name == "wide" {
					return workloadOf(&u).reserved, nil
				}
			}
		}
		return false, err
	})
	poll(t, "both ranks of the admitted JobSet to run", func(ctx context.Context) (bool, error) {
		pods, err := podsOf(ctx, client, ns, wideJob)
		running := 0
		for _, p := range pods {
			if p.Status.Phase == "Running" {
				running++
			}
		}
		return running == 2, err
	})

	// A high-priority job of 8 GPUs: Kueue preempts the JobSet, whole.
	r.plainJob(ns, "urgent", 8, 5*time.Second, "gpuctl-high")
	r.sync()
	poll(t, "the JobSet to be preempted and the urgent job to run", func(ctx context.Context) (bool, error) {
		pods, err := podsOf(ctx, client, ns, "urgent")
		if err != nil || len(pods) == 0 || pods[0].Status.Phase != "Running" {
			return false, err
		}
		u, err := jobsets.Get(ctx, "wide", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		suspend, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
		return suspend, nil
	})
	if failed := jobSetCondition(t, jobsets, "Failed"); failed != "" {
		t.Fatalf("the preempted JobSet failed: %s", failed)
	}
	// gpuctl describe says it was preempted and waits in its queue again.
	reader := &cluster.Reader{Client: client, Dynamic: dyn}
	var d cluster.JobDescription
	poll(t, "describe to show the preemption", func(ctx context.Context) (bool, error) {
		var err error
		d, err = reader.JobDescription(ctx, ns+".wide")
		return err == nil && d.Job.Queue != nil && d.Job.Queue.State == cluster.QueuePreempted, err
	})
	if d.Job.K8sResources.Kind != render.JobSetKind || d.Job.Status != cluster.StatusPreempted ||
		!strings.Contains(d.Job.Reason, "Preempted by gang.urgent") || !strings.Contains(d.Job.Reason, "requeued") {
		t.Errorf("describe wide: %s, status %s, reason %q; want a JobSet Preempted by gang.urgent, requeued", d.Job.K8sResources.Kind, d.Job.Status, d.Job.Reason)
	}
	t.Logf("describe wide while preempted: status %s, reason %q, queue %s", d.Job.Status, d.Job.Reason, d.Job.Queue.State)

	// Once the urgent job is done, the JobSet is admitted again and completes.
	poll(t, "the requeued JobSet to complete", func(context.Context) (bool, error) {
		if failed := jobSetCondition(t, jobsets, "Failed"); failed != "" {
			t.Fatalf("the requeued JobSet failed: %s", failed)
		}
		return jobSetCondition(t, jobsets, "Completed") != "", nil
	})
	u, err := jobsets.Get(t.Context(), "wide", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if restarts, _, _ := unstructured.NestedInt64(u.Object, "status", "restarts"); restarts != 0 {
		t.Errorf("the JobSet counts %d restarts, want 0: a preemption by Kueue is not a failed attempt", restarts)
	}
	noQuotaRefusals(t, client, ns)
	remove() // not the sync's: the sync does not prune it
	r.emptyTeam(ns)
}

// jobSetCondition is the message (or reason, when it has none) of the JobSet wide's condition
// typ when it is True, "" otherwise.
func jobSetCondition(t *testing.T, jobsets interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
}, typ string) string {
	t.Helper()
	u, err := jobsets.Get(t.Context(), "wide", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			if msg, _ := m["message"].(string); msg != "" {
				return msg
			}
			reason, _ := m["reason"].(string)
			return typ + " " + reason
		}
	}
	return ""
}

// priorityClass converts a rendered PriorityClass.
func priorityClass(t *testing.T, u *unstructured.Unstructured) *schedulingv1.PriorityClass {
	t.Helper()
	var pc schedulingv1.PriorityClass
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pc); err != nil {
		t.Fatal(err)
	}
	return &pc
}
