package cluster

import (
	"context"
	"fmt"
	"sort"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	corev1 "k8s.io/api/core/v1"
)

// Pool statuses.
const (
	// PoolActive is a pool with at least one node.
	PoolActive = "active"
	// PoolEmpty is a registered pool whose nodes do not exist or are not labelled yet.
	PoolEmpty = "empty"
)

// unknownGPUType counts the GPUs of nodes without a g8s.host/gpu-type label.
const unknownGPUType = "unknown"

// PoolList is every pool, by name: the answer of GET /api/v1/pools.
type PoolList struct {
	Items []PoolSummary `json:"items"`
}

// PoolSummary is one pool of a PoolList. The pools are those of the registry (pool files in
// Git) and those named by node labels; "default" holds the nodes in no pool.
type PoolSummary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Registered is true for a pool declared in a pool file.
	Registered bool   `json:"registered"`
	Status     string `json:"status"`
	NodeCount  int    `json:"nodeCount"`
	// GPUTotal is the nodes' allocatable nvidia.com/gpu; GPUUsed what their active pods request.
	GPUTotal int64 `json:"gpuTotal"`
	GPUUsed  int64 `json:"gpuUsed"`
	GPUFree  int64 `json:"gpuFree"`
	// GPUType lists the GPU types of the nodes and of the pool file, sorted.
	GPUType []string `json:"gpuType"`
}

// PoolDetail is one pool in full, the answer of GET /api/v1/pools/{name}.
type PoolDetail struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Registered  bool   `json:"registered"`
	Status      string `json:"status"`
	// Nodes are the nodes labelled with the pool; DeclaredNodes those of the pool file.
	Nodes         []string                   `json:"nodes"`
	DeclaredNodes []render.PoolRegistryEntry `json:"declaredNodes"`
	GPUTotal      int64                      `json:"gpuTotal"`
	GPUUsed       int64                      `json:"gpuUsed"`
	GPUFree       int64                      `json:"gpuFree"`
	// GPUType counts the allocatable GPUs per type ("unknown" for nodes without a type label).
	GPUType map[string]int64 `json:"gpuType"`
	// Jobs are the pool's gpuctl jobs that have not finished.
	Jobs []PoolJob `json:"jobs"`
}

// PoolJob is a job of a PoolDetail.
type PoolJob struct {
	JobID  string `json:"jobId"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	GPU    int64  `json:"gpu"`
}

// pool is what is known of one pool: its registry entry and its live nodes.
type pool struct {
	name, description string
	registered        bool
	declared          []render.PoolRegistryEntry
	nodes             []*corev1.Node
}

// Pools lists every pool, by name: the pools of the registry and those named by node labels,
// with "default" for the nodes in no pool.
func (r *Reader) Pools(ctx context.Context) (PoolList, error) {
	pools, usage, err := r.collectPools(ctx)
	if err != nil {
		return PoolList{}, err
	}
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	sort.Strings(names)
	out := PoolList{Items: []PoolSummary{}}
	for _, name := range names {
		out.Items = append(out.Items, pools[name].summary(usage))
	}
	return out, nil
}

// Pool reads one pool with its unfinished jobs. An unknown pool is a *NotFoundError.
func (r *Reader) Pool(ctx context.Context, name string) (PoolDetail, error) {
	pools, usage, err := r.collectPools(ctx)
	if err != nil {
		return PoolDetail{}, err
	}
	p, ok := pools[name]
	if !ok {
		return PoolDetail{}, &NotFoundError{Kind: "pool", Name: name}
	}
	d := p.detail(usage)
	jobs, err := r.listWorkloads(ctx, workloadSelector("", name))
	if err != nil {
		return PoolDetail{}, fmt.Errorf("pool %s: %w", name, err)
	}
	for _, wl := range jobs {
		if !wl.terminal() {
			d.Jobs = append(d.Jobs, PoolJob{JobID: wl.id(), Name: wl.meta.Name, Kind: wl.kind,
				Status: wl.status, GPU: wl.gpus()})
		}
	}
	return d, nil
}

// collectPools reads the pool registry, the nodes and what the pods on them request.
func (r *Reader) collectPools(ctx context.Context) (map[string]*pool, map[string]requests, error) {
	pools, err := r.registry(ctx)
	if err != nil {
		return nil, nil, err
	}
	nodes, err := r.ObjectSource().Nodes(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		name := nodePool(n)
		if pools[name] == nil {
			pools[name] = &pool{name: name}
		}
		pools[name].nodes = append(pools[name].nodes, n)
	}
	usage, err := r.usageByNode(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	return pools, usage, nil
}

// registry reads the pool registry: the ConfigMaps that render writes for pool files
// (render.PoolRecord). An entry whose node list does not decode is logged and shown without
// declared nodes.
func (r *Reader) registry(ctx context.Context) (map[string]*pool, error) {
	ns := r.namespace()
	cms, err := r.ObjectSource().PoolRegistry(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("list pool registry in %s: %w", ns, err)
	}
	sortByName(cms)
	pools := map[string]*pool{}
	for _, cm := range cms {
		rec, err := render.DecodePoolRecord(cm)
		if err != nil {
			r.log().Warn("pool registry: bad node list", "err", err)
		}
		pools[rec.Name] = &pool{name: rec.Name, description: rec.Description, registered: true, declared: rec.Nodes}
	}
	return pools, nil
}

func (p *pool) summary(usage map[string]requests) PoolSummary {
	s := PoolSummary{Name: p.name, Description: p.description, Registered: p.registered,
		Status: PoolEmpty, NodeCount: len(p.nodes), GPUType: []string{}}
	if p.name == keys.DefaultPool && !p.registered && s.Description == "" {
		s.Description = "nodes in no pool"
	}
	if len(p.nodes) > 0 {
		s.Status = PoolActive
	}
	types := map[string]bool{}
	for _, n := range p.nodes {
		s.GPUTotal += allocatableGPUs(n)
		s.GPUUsed += usage[n.Name].gpu
		if t := n.Labels[keys.GPUType]; t != "" {
			types[t] = true
		}
	}
	for _, e := range p.declared {
		if e.GPUType != "" {
			types[e.GPUType] = true
		}
	}
	for t := range types {
		s.GPUType = append(s.GPUType, t)
	}
	sort.Strings(s.GPUType)
	s.GPUFree = max(0, s.GPUTotal-s.GPUUsed)
	return s
}

func (p *pool) detail(usage map[string]requests) PoolDetail {
	s := p.summary(usage)
	d := PoolDetail{Name: s.Name, Description: s.Description, Registered: s.Registered, Status: s.Status,
		Nodes: []string{}, DeclaredNodes: p.declared, GPUTotal: s.GPUTotal, GPUUsed: s.GPUUsed,
		GPUFree: s.GPUFree, GPUType: map[string]int64{}, Jobs: []PoolJob{}}
	if d.DeclaredNodes == nil {
		d.DeclaredNodes = []render.PoolRegistryEntry{}
	}
	for _, t := range s.GPUType {
		d.GPUType[t] = 0
	}
	for _, n := range p.nodes {
		d.Nodes = append(d.Nodes, n.Name)
		gpus := allocatableGPUs(n)
		t := n.Labels[keys.GPUType]
		if t == "" && gpus == 0 {
			continue
		}
		if t == "" {
			t = unknownGPUType
		}
		d.GPUType[t] += gpus
	}
	return d
}
