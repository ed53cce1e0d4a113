package clusterfixture

import (
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// T0 is when every object of the fixture was created.
var T0 = time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)

// At is T0 plus d.
func At(d time.Duration) *metav1.Time { t := metav1.NewTime(T0.Add(d)); return &t }

// Q parses a quantity.
func Q(s string) resource.Quantity { return resource.MustParse(s) }

// Objects is the fixture: four nodes, two registered pools, six gpuctl jobs, pods and quotas.
//
//   - nodes cpu-1 (no pool, no GPU), gpu-1 (training-pool, 8 a100-80g), gpu-2 (training-pool,
//     8 a100-40g, not ready), gpu-3 (no pool, 4 t4);
//   - registered pools training-pool (gpu-1, gpu-2) and inference-pool (inf-1, which does not
//     exist), and an unrelated ConfigMap in the system namespace;
//   - jobs alice.sft (training, running, 4 GPUs, source and description annotations),
//     alice.old (succeeded), bob.failed-run (failed), bob.llm (inference, 1 of 2 replicas
//     ready, 1 GPU each), bob.web (compute, running), alice.nb (notebook, pending); and two
//     Deployments in bob that are not gpuctl jobs;
//   - pods sft-abcde (on gpu-1), old-xyz (succeeded), llm-1 (on gpu-3), llm-2 (pending), and
//     stray (not gpuctl's, 2 GPUs on gpu-2);
//   - gpuctl quotas for alice (cpu, memory and GPUs) and bob (GPUs), and carol's own quota.
func Objects() []runtime.Object {
	objs := []runtime.Object{
		Node("cpu-1", "", "", 0, true),
		Node("gpu-1", "training-pool", "a100-80g", 8, true),
		Node("gpu-2", "training-pool", "a100-40g", 8, false),
		Node("gpu-3", "", "t4", 4, true),
		Registry("training-pool", "for training", `[{"name":"gpu-1","gpuType":"a100-80g"},{"name":"gpu-2","gpuType":"a100-40g"}]`),
		Registry("inference-pool", "for inference", `[{"name":"inf-1","gpuType":"a10-24g"}]`),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: keys.SystemNamespace}},
	}
	sft := Job("alice", "sft", "training-pool", 4, batchv1.JobStatus{Active: 1, StartTime: At(5 * time.Minute)})
	sft.Annotations = map[string]string{keys.Source: "teams/alice/sft.yaml", keys.Description: "qwen2 sft"}
	sft.Spec.Template.Spec.NodeSelector = map[string]string{keys.GPUType: "a100-80g"}
	objs = append(objs, sft,
		Job("alice", "old", "training-pool", 2, batchv1.JobStatus{Succeeded: 1}),
		Job("bob", "failed-run", keys.DefaultPool, 0, batchv1.JobStatus{Failed: 1}),
		Deployment("bob", "llm", "inference", keys.DefaultPool, 2, 1, 1),
		Deployment("bob", "web", "compute", keys.DefaultPool, 1, 1, 0),
		StatefulSet("alice", "nb", "training-pool", 1, 0),
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "bob"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "not-a-job", Namespace: "bob",
			Labels: map[string]string{keys.ManagedBy: keys.ManagedByValue}}},
		Pod("alice", "sft-abcde", "sft", "gpu-1", corev1.PodRunning, 4, At(5*time.Minute)),
		Pod("alice", "old-xyz", "old", "gpu-1", corev1.PodSucceeded, 2, At(0)),
		Pod("bob", "llm-1", "llm", "gpu-3", corev1.PodRunning, 1, At(10*time.Minute)),
		Pod("bob", "llm-2", "llm", "", corev1.PodPending, 1, nil),
		Pod("bob", "stray", "", "gpu-2", corev1.PodRunning, 2, At(0)),
		Quota("alice", "team-quota", corev1.ResourceList{corev1.ResourceRequestsCPU: Q("10"),
			corev1.ResourceRequestsMemory: Q("20Gi"), keys.QuotaRequestsGPU: Q("4")},
			corev1.ResourceList{corev1.ResourceRequestsCPU: Q("5"), corev1.ResourceRequestsMemory: Q("5Gi"),
				keys.QuotaRequestsGPU: Q("4")}),
		Quota("bob", "team-quota", corev1.ResourceList{keys.QuotaRequestsGPU: Q("2")},
			corev1.ResourceList{keys.QuotaRequestsGPU: Q("1")}),
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "carol"}},
	)
	return objs
}

// Node is a node created at T0 with 64 CPUs, 256Gi and gpus allocatable, in a pool and of a
// GPU type when they are not empty, and Ready or not.
func Node(name, pool, gpuType string, gpus int64, ready bool) *corev1.Node {
	labels := map[string]string{"kubernetes.io/hostname": name}
	if pool != "" {
		labels[keys.Pool] = pool
	}
	if gpuType != "" {
		labels[keys.GPUType] = gpuType
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: Q("64"), corev1.ResourceMemory: Q("256Gi")}
	if gpus > 0 {
		alloc[keys.ResourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(T0)},
		Status: corev1.NodeStatus{Allocatable: alloc, Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: *At(time.Hour)},
			{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: *At(2 * time.Hour)},
		}},
	}
}

// Registry is the registry ConfigMap of a pool, spelled out as docs/format.md documents it
// (not built by render, so that the reader is tested against the documented format); nodes
// is the JSON of its node list.
func Registry(name, desc, nodes string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: keys.PoolRegistryPrefix + name, Namespace: keys.SystemNamespace,
			Labels: map[string]string{keys.PoolRegistry: "true", keys.Pool: name, keys.ManagedBy: keys.ManagedByValue}},
		Data: map[string]string{"name": name, "description": desc, "nodes": nodes},
	}
}

func jobLabels(name, kind, pool string) map[string]string {
	return map[string]string{keys.JobType: kind, keys.Pool: pool, keys.Priority: "medium", keys.App: name,
		keys.ManagedBy: keys.ManagedByValue}
}

func template(name, kind, pool string, gpus int64) corev1.PodTemplateSpec {
	res := corev1.ResourceList{corev1.ResourceCPU: Q("32"), corev1.ResourceMemory: Q("128Gi")}
	if gpus > 0 {
		res[keys.ResourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: jobLabels(name, kind, pool)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img",
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
	}
}

// Job is a gpuctl training Job whose pod asks for 32 CPUs, 128Gi and gpus.
func Job(ns, name, pool string, gpus int64, st batchv1.JobStatus) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: jobLabels(name, "training", pool),
			CreationTimestamp: metav1.NewTime(T0)},
		Spec:   batchv1.JobSpec{Template: template(name, "training", pool, gpus)},
		Status: st,
	}
}

// Deployment is a gpuctl Deployment of a kind (inference or compute) with ready of its
// replicas ready, selecting its pods by app=<name>.
func Deployment(ns, name, kind, pool string, replicas, ready int32, gpus int64) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: jobLabels(name, kind, pool),
			CreationTimestamp: metav1.NewTime(T0)},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: template(name, kind, pool, gpus),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: name}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

// StatefulSet is a gpuctl notebook StatefulSet without GPUs.
func StatefulSet(ns, name, pool string, replicas, ready int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: jobLabels(name, "notebook", pool),
			CreationTimestamp: metav1.NewTime(T0)},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Template: template(name, "notebook", pool, 0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: name}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: ready},
	}
}

// Pod is a pod of app (gpuctl's when app is not empty) on a node ("" while pending) whose
// container has limits only (32 CPUs, 128Gi, gpus), as the API server would default them.
func Pod(ns, name, app, nodeName string, phase corev1.PodPhase, gpus int64, started *metav1.Time) *corev1.Pod {
	labels := map[string]string{}
	if app != "" {
		labels = map[string]string{keys.App: app, keys.ManagedBy: keys.ManagedByValue}
	}
	res := corev1.ResourceList{corev1.ResourceCPU: Q("32"), corev1.ResourceMemory: Q("128Gi"),
		keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{Limits: res}}}},
		Status: corev1.PodStatus{Phase: phase, StartTime: started},
	}
}

// Quota is a gpuctl ResourceQuota with its used resources, which the API server's quota
// controller sets in a real cluster.
func Quota(ns, name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{keys.Quota: name, keys.ManagedBy: keys.ManagedByValue}},
		Spec:   corev1.ResourceQuotaSpec{Hard: hard},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}
