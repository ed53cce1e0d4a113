package review

import (
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// podWorkload is what the policy checks read from a rendered object that runs pods, whatever
// wrote it: a gpuctl document, a plain manifest or a kustomize overlay over either.
type podWorkload struct {
	// Spec is the pod spec (shared with the object: do not change it).
	Spec map[string]any
	// GPUs is what the object requests while it runs in full: Pods × PodGPUs.
	GPUs int64
	// Pods is how many pods run at once: replicas, parallelism, 1 for a Pod; a DaemonSet
	// counts one (its node count is the cluster's), a CronJob one Job.
	Pods int64
	// PodGPUs is the nvidia.com/gpu of one pod (see podGPUs).
	PodGPUs int64
	// Images are the images of its containers, init containers and ephemeral containers,
	// each once, in order.
	Images []string
	// PriorityClass is the pod spec's priorityClassName.
	PriorityClass string
}

// podWorkloadOf returns the pod spec of u and what it requests; ok is false for objects that
// run no pods. The kinds are those of the tenant pod policy: Pod, Deployment, StatefulSet,
// ReplicaSet, DaemonSet, ReplicationController, Job and CronJob.
func podWorkloadOf(u *unstructured.Unstructured) (podWorkload, bool) {
	tp, ok := render.PodTemplatePath(u.GetKind()) // the kinds of the tenant pod policy
	if !ok {
		return podWorkload{}, false
	}
	path := append(tp, "spec")
	var pods []string // where the number of pods running at once is written
	switch u.GetKind() {
	case "Deployment", "StatefulSet", "ReplicaSet", "ReplicationController":
		pods = []string{"spec", "replicas"}
	case "Job":
		pods = []string{"spec", "parallelism"}
	case "CronJob":
		pods = []string{"spec", "jobTemplate", "spec", "parallelism"}
	}
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	spec, _ := v.(map[string]any)
	var n int64 = 1 // replicas and parallelism default to 1, as the API server sets them
	if pods != nil {
		if v, found, _ := unstructured.NestedInt64(u.Object, pods...); found {
			n = v
		}
	}
	w := podWorkload{Spec: spec, Pods: n, PodGPUs: podGPUs(spec)}
	w.GPUs = w.Pods * w.PodGPUs
	w.PriorityClass, _, _ = unstructured.NestedString(spec, "priorityClassName")
	seen := map[string]bool{}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		for _, c := range containers(spec, list) {
			if img, _ := c["image"].(string); !seen[img] {
				seen[img] = true
				w.Images = append(w.Images, img)
			}
		}
	}
	return w, true
}

// containers returns the maps of one container list of a pod spec.
func containers(spec map[string]any, list string) []map[string]any {
	items, _ := spec[list].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if c, ok := it.(map[string]any); ok {
			out = append(out, c)
		}
	}
	return out
}

// podGPUs is the nvidia.com/gpu that the scheduler reserves for one pod: the containers and
// the sidecars (init containers that keep running) together, or the largest other init
// container if that is more. Each container is counted by reconciler.GPUsRequested, as the
// budget counts them.
func podGPUs(spec map[string]any) int64 {
	count := func(cs ...map[string]any) int64 {
		list := make([]any, len(cs))
		for i, c := range cs {
			list[i] = c
		}
		pod := map[string]any{"kind": "Pod", "spec": map[string]any{"containers": list}}
		return reconciler.GPUsRequested(&unstructured.Unstructured{Object: pod})
	}
	running := count(containers(spec, "containers")...)
	var initMax int64
	for _, c := range containers(spec, "initContainers") {
		if c["restartPolicy"] == "Always" {
			running += count(c)
		} else {
			initMax = max(initMax, count(c))
		}
	}
	return max(running, initMax)
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
