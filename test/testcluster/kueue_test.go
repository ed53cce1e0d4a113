package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// kueueResource is a Kueue resource in version v1beta2, which gpuctl uses.
func kueueResource(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: resource}
}

// The real Kueue of Options.Kueue queues a team's Jobs by its ClusterQueue's quota: three Jobs
// of 4 GPUs without a queue-name label in a namespace with a LocalQueue default, under a
// quota of 8 GPUs: two run, the third waits as a Workload without quota (its pod is never
// created, let alone refused) and runs once one of the others has finished.
func TestKueueQueuesJobsByQuota(t *testing.T) {
	t.Parallel()
	c, client, ns := testcluster.Current(), newClient(t), newNamespace(t)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// A pool node of this test, tainted so that the other tests' pods stay off it; the flavor
	// tolerates the taint, and Kueue gives admitted pods its node labels and toleration.
	const pool, taint = "kueue-pool", "testcluster.gpuctl.dev/kueue-test"
	node := testcluster.NodeSpec{Name: "gpu-kueue-0", GPUs: 8, GPUProduct: "NVIDIA-A100-SXM4-80GB", GPUType: "a100-80g",
		CPU: "128", Memory: "1Ti", Labels: map[string]string{keys.Pool: pool},
		Taints: []corev1.Taint{{Key: taint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}}
	if err := c.AddNode(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNode(context.Background(), node.Name) })

	queues := []map[string]any{
		{"kind": "ResourceFlavor", "metadata": map[string]any{"name": pool}, "spec": map[string]any{
			"nodeLabels":  map[string]any{keys.Pool: pool},
			"tolerations": []any{map[string]any{"key": taint, "operator": "Exists", "effect": "NoSchedule"}},
		}},
		{"kind": "ClusterQueue", "metadata": map[string]any{"name": ns}, "spec": map[string]any{
			"cohortName":        ns,
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: ns}},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu", "memory", keys.ResourceGPU},
				"flavors": []any{map[string]any{"name": pool, "resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": "64"},
					map[string]any{"name": "memory", "nominalQuota": "512Gi"},
					map[string]any{"name": keys.ResourceGPU, "nominalQuota": "8"},
				}}},
			}},
		}},
		{"kind": "LocalQueue", "metadata": map[string]any{"name": keys.KueueLocalQueue, "namespace": ns},
			"spec": map[string]any{"clusterQueue": ns}},
	}
	for _, q := range queues {
		u := &unstructured.Unstructured{Object: q}
		u.SetAPIVersion(keys.KueueGroup + "/" + keys.KueueVersion)
		ri := dynamic.ResourceInterface(dyn.Resource(kueueResource(strings.ToLower(u.GetKind()) + "s")))
		if u.GetNamespace() != "" {
			ri = dyn.Resource(kueueResource(strings.ToLower(u.GetKind()) + "s")).Namespace(ns)
		}
		if _, err := ri.Apply(t.Context(), u.GetName(), u, metav1.ApplyOptions{FieldManager: "test", Force: true}); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	t.Cleanup(func() {
		_ = dyn.Resource(kueueResource("clusterqueues")).Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// LocalQueueDefaulting puts label-less Jobs in the LocalQueue default once Kueue knows it.
	poll(t, "LocalQueue default to be Active", func(ctx context.Context) (bool, error) {
		lq, err := dyn.Resource(kueueResource("localqueues")).Namespace(ns).Get(ctx, keys.KueueLocalQueue, metav1.GetOptions{})
		return err == nil && conditionStatus(lq, "Active") == "True", err
	})

	// The conversion webhook serves the ClusterQueue in v1beta1, Kueue's storage version, in
	// which cohortName is cohort.
	quiet := c.RESTConfig()
	quiet.WarningHandler = rest.NoWarnings{} // v1beta1 is deprecated, and read here on purpose
	cq, err := dynamic.NewForConfigOrDie(quiet).Resource(schema.GroupVersionResource{Group: keys.KueueGroup, Version: "v1beta1", Resource: "clusterqueues"}).
		Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the ClusterQueue as v1beta1: %v", err)
	}
	if cohort, _, _ := unstructured.NestedString(cq.Object, "spec", "cohort"); cohort != ns {
		t.Errorf("v1beta1 ClusterQueue spec.cohort = %q, want %q", cohort, ns)
	}

	w, err := dyn.Resource(kueueResource("workloads")).Namespace(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 3 {
		job, err := client.BatchV1().Jobs(ns).Create(t.Context(), fourGPUJob(fmt.Sprintf("train-%d", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if q := job.Labels[keys.KueueQueueName]; q != keys.KueueLocalQueue || job.Spec.Suspend == nil || !*job.Spec.Suspend {
			t.Fatalf("Job %s created with queue %q and suspend %v, want %q and true (Kueue's webhook)", job.Name, q, job.Spec.Suspend, keys.KueueLocalQueue)
		}
	}
	watchQueueDrain(t, w, 3)

	jobs, err := client.BatchV1().Jobs(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if j.Status.Succeeded != 1 {
			t.Errorf("Job %s: %d pods succeeded, want 1", j.Name, j.Status.Succeeded)
		}
	}
	pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Errorf("%d pods, want 3 (one per Job)", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != node.Name || p.Spec.NodeSelector[keys.Pool] != pool {
			t.Errorf("pod %s on node %q with node selector %v, want %s and %s=%s from the flavor", p.Name, p.Spec.NodeName, p.Spec.NodeSelector, node.Name, keys.Pool, pool)
		}
	}
	refused, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range refused.Items {
		t.Errorf("a pod was refused: %s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
	}
}

// workloadState is what watchQueueDrain saw of one Workload.
type workloadState struct {
	reserved, finished bool
	pending            string // the message of QuotaReserved False, once seen
}

// watchQueueDrain follows the Workloads of w until n have finished. At no point may more than
// two hold quota (8 GPUs of 4 each); at some point two must hold quota while another waits for
// it (QuotaReserved False, insufficient GPU quota); and the last to get quota gets it only after
// one of the others has finished.
func watchQueueDrain(t *testing.T, w watch.Interface, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	states := map[string]*workloadState{}
	sawQueued, granted := false, 0
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d Workloads to finish: %v; saw %s", n, ctx.Err(), describeStates(states))
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the Workload watch ended; saw %s", describeStates(states))
			}
			ev = e
		}
		wl, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Error {
			t.Fatalf("Workload watch: %s event %v", ev.Type, ev.Object)
		}
		s := states[wl.GetName()]
		if s == nil {
			s = &workloadState{}
			states[wl.GetName()] = s
		}
		wasReserved := s.reserved
		s.reserved = conditionStatus(wl, "QuotaReserved") == "True"
		s.finished = conditionStatus(wl, "Finished") == "True"
		if !s.reserved && !s.finished && conditionField(wl, "QuotaReserved", "reason") == "Pending" {
			s.pending = conditionField(wl, "QuotaReserved", "message")
		}
		holding, finished, waiting := 0, 0, 0
		for _, o := range states {
			switch {
			case o.finished:
				finished++
			case o.reserved:
				holding++
			case o.pending != "":
				waiting++
			}
		}
		if holding > 2 {
			t.Fatalf("%d Workloads of 4 GPUs hold quota under a quota of 8: %s", holding, describeStates(states))
		}
		if holding == 2 && waiting == 1 {
			sawQueued = true
		}
		if s.reserved && !wasReserved {
			if granted++; granted > 2 && finished == 0 {
				t.Fatalf("Workload %s is the third to get quota, before any other finished: %s", wl.GetName(), describeStates(states))
			}
		}
		if finished == n {
			break
		}
	}
	if !sawQueued {
		t.Errorf("never saw 2 Workloads holding quota while 1 waited: %s", describeStates(states))
	}
	for name, s := range states {
		if s.pending != "" && !strings.Contains(s.pending, "insufficient unused quota for "+keys.ResourceGPU) {
			t.Errorf("Workload %s waited with %q, want insufficient unused quota for %s", name, s.pending, keys.ResourceGPU)
		}
	}
}

// describeStates lists the Workloads watchQueueDrain saw, for failure messages.
func describeStates(states map[string]*workloadState) string {
	var parts []string
	for name, s := range states {
		parts = append(parts, fmt.Sprintf("%s{reserved=%v finished=%v pending=%q}", name, s.reserved, s.finished, s.pending))
	}
	return strings.Join(parts, ", ")
}

// fourGPUJob is a Job of one pod asking for 4 GPUs, without a queue-name label or suspend. Its
// pod runs for 5 s: kwok's usual second could end a Job before Kueue has written that the third
// Workload waits, and the test would never see two Workloads hold quota while one waits.
func fourGPUJob(name string) *batchv1.Job {
	requests := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1"),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
		keys.ResourceGPU:      resource.MustParse("4"),
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "registry.example/never-pulled:latest",
					Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests},
				}},
			}},
		},
	}
	testcluster.RunFor(&job.Spec.Template, 5*time.Second)
	return job
}

// conditionStatus returns the status of u's condition typ, or "" without one.
func conditionStatus(u *unstructured.Unstructured, typ string) string {
	return conditionField(u, typ, "status")
}

// conditionField returns a field (status, reason, message) of u's condition typ, or "".
func conditionField(u *unstructured.Unstructured, typ, field string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			s, _ := m[field].(string)
			return s
		}
	}
	return ""
}
