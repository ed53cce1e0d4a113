package cluster

import "github.com/gpuctl/gpuctl/usage"

// UsagePods are the rows as package usage joins them to GPU series.
func (l JobPodList) UsagePods() []usage.Pod {
	out := make([]usage.Pod, 0, len(l.Items))
	for _, r := range l.Items {
		rank := -1
		if r.Rank != nil {
			rank = *r.Rank
		}
		out = append(out, usage.Pod{JobID: r.JobID, Namespace: r.Namespace, Name: r.Name, Kind: r.Kind, Pool: r.Pool,
			GPUType: r.GPUType, Pod: r.Pod, Phase: r.Phase, GPU: r.GPU, Rank: rank})
	}
	return out
}

// UsageNodes are the nodes as package usage joins them to GPU series.
func (l NodeList) UsageNodes() []usage.Node {
	out := make([]usage.Node, 0, len(l.Items))
	for _, n := range l.Items {
		out = append(out, usage.Node{Name: n.NodeName, Pool: n.Pool, GPUType: n.GPUType, GPUs: n.GPUTotal, Allocated: n.GPUUsed})
	}
	return out
}
