package object

import (
	"fmt"
	"strconv"

	"github.com/gpuctl/gpuctl/internal/keys"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// PodTemplatePath returns the path of the pod template (the map holding metadata and spec)
// of a pod-creating kind: empty for a Pod (the object itself), spec.template for
// Deployment, StatefulSet, ReplicaSet, DaemonSet, ReplicationController and Job,
// spec.jobTemplate.spec.template for CronJob; false for every other kind.
func PodTemplatePath(kind string) ([]string, bool) {
	switch kind {
	case "Pod":
		return []string{}, true
	case "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "ReplicationController", "Job":
		return []string{"spec", "template"}, true
	case "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template"}, true
	}
	return nil, false
}

// podsPath is where a pod-creating kind writes how many pods run at once (nil: one pod).
func podsPath(kind string) []string {
	switch kind {
	case "Deployment", "StatefulSet", "ReplicaSet", "ReplicationController":
		return []string{"spec", "replicas"}
	case "Job":
		return []string{"spec", "parallelism"}
	case "CronJob":
		return []string{"spec", "jobTemplate", "spec", "parallelism"}
	}
	return nil
}

// PodSpec returns the pod spec of a pod-creating object (shared with the object: do not change
// it) and how many pods run at once while it runs in full: replicas, parallelism (a CronJob's
// Job's), 1 for a Pod and for a DaemonSet (its node count is the cluster's). Replicas and
// parallelism default to 1, as the API server sets them. ok is false for kinds that run no
// pods (see PodTemplatePath).
func PodSpec(u *unstructured.Unstructured) (spec map[string]any, pods int64, ok bool) {
	tp, ok := PodTemplatePath(u.GetKind())
	if !ok {
		return nil, 0, false
	}
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, append(tp, "spec")...)
	spec, _ = v.(map[string]any)
	pods = 1
	if p := podsPath(u.GetKind()); p != nil {
		if n, found, _ := unstructured.NestedInt64(u.Object, p...); found {
			pods = n
		}
	}
	return spec, pods, true
}

// GPUs returns the nvidia.com/gpu that an object requests while it runs in full: its pods
// (see PodSpec) times the GPUs of one pod (see PodGPUs). Objects that run no pods, and nil,
// request 0.
func GPUs(u *unstructured.Unstructured) int64 {
	if u == nil {
		return 0
	}
	spec, pods, ok := PodSpec(u)
	if !ok {
		return 0
	}
	return pods * PodGPUs(spec)
}

// PodGPUs returns the nvidia.com/gpu that the scheduler reserves for one pod of a pod spec
// (unstructured content), Kubernetes' effective request: the containers and the sidecars
// (init containers with restartPolicy Always) together, or, if that is more, the largest
// other init container plus the sidecars started before it. A container requests its
// request, or its limit when it sets no request (the API server defaults the one to the
// other). Ephemeral containers reserve nothing.
func PodGPUs(spec map[string]any) int64 {
	if inits, _ := spec["initContainers"].([]any); len(inits) == 0 {
		// No init containers (the common case, and a plan counts every object): the
		// containers add up.
		var n int64
		for _, c := range Containers(spec, "containers") {
			n += containerGPUs(c, "requests", "limits")
		}
		return n
	}
	var running []corev1.ResourceList
	for _, c := range Containers(spec, "containers") {
		running = append(running, gpuList(containerGPUs(c, "requests", "limits")))
	}
	var inits []initRequests
	for _, c := range Containers(spec, "initContainers") {
		inits = append(inits, initRequests{list: gpuList(containerGPUs(c, "requests", "limits")), sidecar: c["restartPolicy"] == "Always"})
	}
	q := effective(running, inits)[keys.ResourceGPU]
	return q.Value()
}

// gpuList is a resource list of n GPUs.
func gpuList(n int64) corev1.ResourceList {
	return corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
}

// PodSpecGPUs is PodGPUs of a typed pod spec.
func PodSpecGPUs(spec *corev1.PodSpec) int64 {
	q := PodRequests(spec)[keys.ResourceGPU]
	return q.Value()
}

// PodRequests returns every resource that the scheduler reserves for one pod of a typed pod
// spec, by the rule of PodGPUs (containers and sidecars, or the largest init container plus
// the sidecars started before it; a container's request, or its limit when it sets none).
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	var running []corev1.ResourceList
	for i := range spec.Containers {
		running = append(running, containerRequests(spec.Containers[i].Resources))
	}
	var inits []initRequests
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		inits = append(inits, initRequests{list: containerRequests(c.Resources), sidecar: sidecar})
	}
	return effective(running, inits)
}

// TypedGPUs is GPUs of a typed object (Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet,
// ReplicationController, Job, CronJob), with the same rules; other objects request 0.
func TypedGPUs(obj runtime.Object) int64 {
	switch o := obj.(type) {
	case *corev1.Pod:
		return PodSpecGPUs(&o.Spec)
	case *appsv1.Deployment:
		return count(o.Spec.Replicas) * PodSpecGPUs(&o.Spec.Template.Spec)
	case *appsv1.StatefulSet:
		return count(o.Spec.Replicas) * PodSpecGPUs(&o.Spec.Template.Spec)
	case *appsv1.ReplicaSet:
		return count(o.Spec.Replicas) * PodSpecGPUs(&o.Spec.Template.Spec)
	case *appsv1.DaemonSet:
		return PodSpecGPUs(&o.Spec.Template.Spec)
	case *corev1.ReplicationController:
		if o.Spec.Template == nil {
			return 0
		}
		return count(o.Spec.Replicas) * PodSpecGPUs(&o.Spec.Template.Spec)
	case *batchv1.Job:
		return count(o.Spec.Parallelism) * PodSpecGPUs(&o.Spec.Template.Spec)
	case *batchv1.CronJob:
		return count(o.Spec.JobTemplate.Spec.Parallelism) * PodSpecGPUs(&o.Spec.JobTemplate.Spec.Template.Spec)
	}
	return 0
}

// count is a replicas or parallelism field: 1 when unset, as the API server defaults it.
func count(p *int32) int64 {
	if p == nil {
		return 1
	}
	return int64(*p)
}

// initRequests is what an init container requests, and whether it is a sidecar.
type initRequests struct {
	list    corev1.ResourceList
	sidecar bool
}

// effective is the rule of PodGPUs, per resource, over the requests of the containers and
// of the init containers (in order).
func effective(containers []corev1.ResourceList, inits []initRequests) corev1.ResourceList {
	running, sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
	for _, l := range containers {
		addTo(running, l)
	}
	for _, c := range inits {
		if c.sidecar {
			addTo(sidecars, c.list)
			addTo(running, c.list)
			maxTo(initMax, sidecars)
			continue
		}
		withSidecars := sidecars.DeepCopy()
		addTo(withSidecars, c.list)
		maxTo(initMax, withSidecars)
	}
	maxTo(running, initMax)
	return running
}

// addTo adds every quantity of l to sum.
func addTo(sum, l corev1.ResourceList) {
	for name, q := range l {
		v := sum[name]
		v.Add(q)
		sum[name] = v
	}
}

// maxTo raises every quantity of m to l's where l's is larger.
func maxTo(m, l corev1.ResourceList) {
	for name, q := range l {
		if v, ok := m[name]; !ok || q.Cmp(v) > 0 {
			m[name] = q.DeepCopy()
		}
	}
}

// Containers returns the maps of one container list of a pod spec (unstructured content):
// list is containers, initContainers or ephemeralContainers.
func Containers(spec map[string]any, list string) []map[string]any {
	items, _ := spec[list].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if c, ok := it.(map[string]any); ok {
			out = append(out, c)
		}
	}
	return out
}

// containerGPUs reads the whole GPUs of one container: from the first of the resource maps
// (requests, limits) that names nvidia.com/gpu. A value that is no quantity counts 0.
func containerGPUs(c map[string]any, maps ...string) int64 {
	for _, m := range maps {
		v, found, _ := unstructured.NestedFieldNoCopy(c, "resources", m, keys.ResourceGPU)
		if !found || v == nil {
			continue
		}
		switch n := v.(type) { // a whole number, as most are written: the same value, parsed faster
		case int64:
			return n
		case string:
			if i, err := strconv.ParseInt(n, 10, 64); err == nil {
				return i
			}
		}
		q, err := resource.ParseQuantity(fmt.Sprint(v))
		if err != nil {
			return 0
		}
		return q.Value()
	}
	return 0
}

// containerRequests is what one container requests: per resource, its request, or its
// limit when it sets no request.
func containerRequests(r corev1.ResourceRequirements) corev1.ResourceList {
	out := r.Limits.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range r.Requests {
		out[name] = q.DeepCopy()
	}
	return out
}
