package cluster

import (
	"context"
	"fmt"
	"math"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// requests are the resources that a pod asks the scheduler for.
type requests struct {
	gpu, gpuMem int64 // nvidia.com/gpu; aliyun.com/gpu-mem (GiB)
	cpu, memory resource.Quantity
}

func (r *requests) add(o requests) {
	r.gpu += o.gpu
	r.gpuMem += o.gpuMem
	r.cpu.Add(o.cpu)
	r.memory.Add(o.memory)
}

// requestsOf is what a pod requests, as the scheduler counts it (object.PodRequests).
func requestsOf(spec *corev1.PodSpec) requests {
	l := object.PodRequests(spec)
	gpu, mem := l[keys.ResourceGPU], l[keys.ResourceGPUMem]
	return requests{gpu: gpu.Value(), gpuMem: mem.Value(), cpu: l[corev1.ResourceCPU], memory: l[corev1.ResourceMemory]}
}

// active reports whether a pod still holds its node's resources.
func active(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// usageByNode sums the requests of the active pods on each node; node "" means all nodes.
func (r *Reader) usageByNode(ctx context.Context, node string) (map[string]requests, error) {
	pods, err := r.activePods(ctx, node)
	if err != nil {
		return nil, err
	}
	return usageOf(pods), nil
}

// usageOf sums the requests of the pods on each node.
func usageOf(pods []*corev1.Pod) map[string]requests {
	out := map[string]requests{}
	for _, p := range pods {
		u := out[p.Spec.NodeName]
		u.add(requestsOf(&p.Spec))
		out[p.Spec.NodeName] = u
	}
	return out
}

// activePods lists the active pods on a node ("" for all nodes).
func (r *Reader) activePods(ctx context.Context, node string) ([]*corev1.Pod, error) {
	sel := []fields.Selector{
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	}
	if node != "" {
		sel = append(sel, fields.OneTermEqualSelector("spec.nodeName", node))
	}
	pods, err := r.ObjectSource().Pods(ctx, metav1.NamespaceAll, labels.Everything(), fields.AndSelectors(sel...))
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if active(p) && (node == "" || p.Spec.NodeName == node) { // the field selector is only a hint to the API server
			out = append(out, p)
		}
	}
	return out, nil
}

// podJobID is the job id of a pod of a gpuctl workload (its app label names the job, see
// render), or "".
func podJobID(p *corev1.Pod) string {
	if p.Labels[keys.ManagedBy] != keys.ManagedByValue || p.Labels[keys.App] == "" {
		return ""
	}
	return p.Namespace + "." + p.Labels[keys.App]
}

// allocatableGPUs is the node's allocatable nvidia.com/gpu.
func allocatableGPUs(n *corev1.Node) int64 {
	q := n.Status.Allocatable[keys.ResourceGPU]
	return q.Value()
}

// cores is a CPU quantity in cores, e.g. 0.5 for 500m.
func cores(q resource.Quantity) float64 { return float64(q.MilliValue()) / 1000 }

// percent is used/hard in percent with one decimal, or nil when there is no limit.
func percent(used, hard float64) *float64 {
	if hard <= 0 {
		return nil
	}
	p := math.Round(used/hard*1000) / 10
	return &p
}
