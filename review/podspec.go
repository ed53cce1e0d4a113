package review

import (
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// podWorkload is what the policy checks read from a rendered object that runs pods, whatever
// wrote it: a gpuctl document, a plain manifest or a kustomize overlay over either.
type podWorkload struct {
	// Spec is the pod spec (shared with the object: do not change it).
	Spec map[string]any
	// GPUs is what the object requests while it runs in full: Pods × PodGPUs.
	GPUs int64
	// Pods is how many pods run at once (object.PodSpec): replicas, parallelism, 1 for a
	// Pod; a DaemonSet counts one (its node count is the cluster's), a CronJob one Job.
	Pods int64
	// PodGPUs is the nvidia.com/gpu of one pod (object.PodGPUs).
	PodGPUs int64
	// Images are the images of its containers, init containers and ephemeral containers,
	// each once, in order.
	Images []string
	// PriorityClass is the pod spec's priorityClassName.
	PriorityClass string
}

// podWorkloadOf returns the pod spec of u and what it requests; ok is false for objects that
// run no pods. The kinds are those of the tenant pod policy (object.PodTemplatePath): Pod,
// Deployment, StatefulSet, ReplicaSet, DaemonSet, ReplicationController, Job and CronJob.
func podWorkloadOf(u *unstructured.Unstructured) (podWorkload, bool) {
	spec, pods, ok := object.PodSpec(u)
	if !ok {
		return podWorkload{}, false
	}
	w := podWorkload{Spec: spec, Pods: pods, PodGPUs: object.PodGPUs(spec)}
	w.GPUs = w.Pods * w.PodGPUs
	w.PriorityClass, _, _ = unstructured.NestedString(spec, "priorityClassName")
	seen := map[string]bool{}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		for _, c := range object.Containers(spec, list) {
			if img, _ := c["image"].(string); !seen[img] {
				seen[img] = true
				w.Images = append(w.Images, img)
			}
		}
	}
	return w, true
}

// scaleTargets maps "namespace/Kind/name" of each object that a HorizontalPodAutoscaler of the
// revision scales to the autoscaler's maxReplicas, the pods it may run.
func scaleTargets(objs []*unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	for _, u := range objs {
		if u.GetKind() != "HorizontalPodAutoscaler" {
			continue
		}
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "scaleTargetRef", "name")
		maxReplicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "maxReplicas")
		k := u.GetNamespace() + "/" + kind + "/" + name
		out[k] = max(out[k], maxReplicas)
	}
	return out
}
