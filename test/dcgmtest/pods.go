package dcgmtest

import (
	"fmt"
	"hash/fnv"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// The model and memory ForPods gives each GPU.
const (
	DefaultModel       = "NVIDIA H100 80GB HBM3"
	DefaultMemTotalMiB = 81559
)

// ForPods returns the GPUs of the pods that are bound to a node and whose containers ask for
// nvidia.com/gpu: one GPU per unit of a container's limit (its request when it sets no limit),
// numbered per node from 0 in the order of namespace, pod name and container, with a UUID
// derived from the node and index (stable across calls), model [DefaultModel], memory
// [DefaultMemTotalMiB] and every value 0. Pods that ended (Succeeded, Failed) hold no GPU.
func ForPods(pods []corev1.Pod) []GPU {
	sorted := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		sorted = append(sorted, p)
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Spec.NodeName != b.Spec.NodeName {
			return a.Spec.NodeName < b.Spec.NodeName
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	next := map[string]int{} // node -> next GPU index
	var gpus []GPU
	for _, p := range sorted {
		for _, c := range p.Spec.Containers {
			q, ok := c.Resources.Limits[keys.ResourceGPU]
			if !ok {
				q = c.Resources.Requests[keys.ResourceGPU]
			}
			for range q.Value() {
				node := p.Spec.NodeName
				i := next[node]
				next[node]++
				gpus = append(gpus, GPU{
					Node: node, Index: i, UUID: UUID(node, i), Model: DefaultModel,
					Namespace: p.Namespace, Pod: p.Name, Container: c.Name,
					MemTotalMiB: DefaultMemTotalMiB,
				})
			}
		}
	}
	return gpus
}

// UUID returns the stable UUID ForPods gives the GPU at index on node, in NVML's form
// ("GPU-8-4-4-4-12" hex digits).
func UUID(node string, index int) string {
	var sum [16]byte
	for half := range 2 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s/%d", half, node, index)
		copy(sum[half*8:], h.Sum(nil))
	}
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}
