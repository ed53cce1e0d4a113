package usage

import (
	"slices"
	"sort"
)

// DefaultIdleThreshold is the utilization (percent) below which a GPU counts as idle, and at
// or above which as busy, when no policy says otherwise.
const DefaultIdleThreshold = 5.0

// Usage sums what a set of GPUs did: utilization averaged over the GPUs that report it,
// memory and power summed.
type Usage struct {
	// Reporting counts the GPUs that have series; Busy and Idle those at or above and below
	// the idle threshold.
	Reporting int `json:"reporting"`
	Busy      int `json:"busy"`
	Idle      int `json:"idle"`
	// Util is the average utilization in percent of the reporting GPUs.
	Util        float64 `json:"util"`
	MemUsedMiB  float64 `json:"memUsedMiB"`
	MemTotalMiB float64 `json:"memTotalMiB"`
	PowerW      float64 `json:"powerW"`
	utilSum     float64
	utilN       int
}

// add counts one GPU.
func (u *Usage) add(g GPU, threshold float64) {
	u.Reporting++
	if g.HasUtil {
		u.utilSum += g.Util
		u.utilN++
		u.Util = u.utilSum / float64(u.utilN)
		if g.Idle(threshold) {
			u.Idle++
		} else {
			u.Busy++
		}
	}
	u.MemUsedMiB += g.MemUsedMiB
	u.MemTotalMiB += g.MemTotalMiB
	u.PowerW += g.PowerW
}

// Pod is a pod of a job, as the read model lists it (cluster.JobPodList.UsagePods).
type Pod struct {
	JobID     string
	Namespace string
	Name      string // the job's
	Kind      string
	Pool      string
	GPUType   string
	Pod       string
	Phase     string
	// GPU is what the pod requests of nvidia.com/gpu.
	GPU int64
	// Rank is the pod's completion index in an indexed Job, -1 for none.
	Rank int
}

// holdsGPUs reports whether the pod runs and requests GPUs.
func (p Pod) holdsGPUs() bool { return p.Pod != "" && p.GPU > 0 && p.Phase == "Running" }

// Node is a node with GPUs, as the read model lists it (cluster.NodeList.UsageNodes).
type Node struct {
	Name    string
	Pool    string
	GPUType string
	// GPUs is its nvidia.com/gpu capacity, Allocated what pods request of it.
	GPUs      int64
	Allocated int64
}

// JobTop is a row of gpuctl top jobs.
type JobTop struct {
	JobID     string `json:"jobId"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Pool      string `json:"pool"`
	// Pods counts the job's running pods that request GPUs; GPUs what they request.
	Pods int   `json:"pods"`
	GPUs int64 `json:"gpus"`
	Usage
	// Nodes are the nodes of its GPUs.
	Nodes []string `json:"nodes"`
	// GPUList is each GPU of the job (-o wide, json).
	GPUList []GPU `json:"gpuList"`
}

// TopJobs joins the GPUs to the running pods that hold them, one row per job with a running
// pod that requests GPUs, sorted by namespace and name. A job whose GPUs have no series has
// Reporting 0.
func TopJobs(pods []Pod, gpus []GPU, threshold float64) []JobTop {
	byPod := map[string][]GPU{}
	for _, g := range gpus {
		if k := g.PodKey(); k != "" {
			byPod[k] = append(byPod[k], g)
		}
	}
	rows := map[string]*JobTop{}
	for _, p := range pods {
		if !p.holdsGPUs() {
			continue
		}
		row := rows[p.JobID]
		if row == nil {
			row = &JobTop{JobID: p.JobID, Namespace: p.Namespace, Name: p.Name, Kind: p.Kind, Pool: p.Pool}
			rows[p.JobID] = row
		}
		row.Pods++
		row.GPUs += p.GPU
		for _, g := range byPod[p.Namespace+"/"+p.Pod] {
			row.add(g, threshold)
			row.GPUList = append(row.GPUList, g)
			if !slices.Contains(row.Nodes, g.Node) {
				row.Nodes = append(row.Nodes, g.Node)
			}
		}
	}
	out := make([]JobTop, 0, len(rows))
	for _, r := range rows {
		sort.Strings(r.Nodes)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].JobID < out[j].JobID })
	return out
}

// NodeTop is a row of gpuctl top nodes.
type NodeTop struct {
	Node    string `json:"node"`
	Pool    string `json:"pool"`
	GPUType string `json:"gpuType"`
	// GPUs is the node's nvidia.com/gpu capacity; Allocated what pods request of it.
	GPUs      int64 `json:"gpus"`
	Allocated int64 `json:"allocated"`
	Usage
	// BusyAllocated counts the GPUs held by a pod that are busy; BusyShare is it over
	// Allocated (0 when nothing is allocated).
	BusyAllocated int     `json:"busyAllocated"`
	BusyShare     float64 `json:"busyShare"`
	GPUList       []GPU   `json:"gpuList"`
}

// TopNodes joins the GPUs to the nodes by name, one row per node that has GPUs or series,
// sorted by name.
func TopNodes(nodes []Node, gpus []GPU, threshold float64) []NodeTop {
	rows := map[string]*NodeTop{}
	for _, n := range nodes {
		if n.GPUs > 0 {
			rows[n.Name] = &NodeTop{Node: n.Name, Pool: n.Pool, GPUType: n.GPUType, GPUs: n.GPUs, Allocated: n.Allocated}
		}
	}
	for _, g := range gpus {
		row := rows[g.Node]
		if row == nil {
			row = &NodeTop{Node: g.Node}
			rows[g.Node] = row
		}
		row.add(g, threshold)
		if g.Pod != "" && !g.Idle(threshold) && g.HasUtil {
			row.BusyAllocated++
		}
		row.GPUList = append(row.GPUList, g)
	}
	out := make([]NodeTop, 0, len(rows))
	for _, r := range rows {
		r.BusyShare = share(r.BusyAllocated, r.Allocated)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// PoolTop is a row of gpuctl top pools: its nodes' rows summed.
type PoolTop struct {
	Pool      string `json:"pool"`
	Nodes     int    `json:"nodes"`
	GPUs      int64  `json:"gpus"`
	Allocated int64  `json:"allocated"`
	Usage
	BusyAllocated int     `json:"busyAllocated"`
	BusyShare     float64 `json:"busyShare"`
}

// TopPools sums node rows per pool ("default" for nodes in no pool), sorted by pool.
func TopPools(nodes []NodeTop, threshold float64) []PoolTop {
	rows := map[string]*PoolTop{}
	for _, n := range nodes {
		name := n.Pool
		if name == "" {
			name = "default"
		}
		row := rows[name]
		if row == nil {
			row = &PoolTop{Pool: name}
			rows[name] = row
		}
		row.Nodes++
		row.GPUs += n.GPUs
		row.Allocated += n.Allocated
		row.BusyAllocated += n.BusyAllocated
		for _, g := range n.GPUList {
			row.add(g, threshold)
		}
	}
	out := make([]PoolTop, 0, len(rows))
	for _, r := range rows {
		r.BusyShare = share(r.BusyAllocated, r.Allocated)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out
}

func share(n int, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return float64(n) / float64(of)
}
