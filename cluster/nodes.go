package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Node statuses, as kubectl shows them.
const (
	NodeReady    = "Ready"
	NodeNotReady = "NotReady"
)

// NodeList is a page of nodes, the answer of GET /api/v1/nodes.
type NodeList struct {
	// Total counts the nodes that match the filter, on all pages. Page and PageSize are the
	// filter's page (page 1 and size 0 when not paged).
	Total    int           `json:"total"`
	Page     int           `json:"page"`
	PageSize int           `json:"pageSize"`
	Items    []NodeSummary `json:"items"`
}

// NodeSummary is one node of a NodeList.
type NodeSummary struct {
	NodeName string `json:"nodeName"`
	// Status is Ready or NotReady; Unschedulable is a cordoned node.
	Status        string `json:"status"`
	Unschedulable bool   `json:"unschedulable"`
	// GPUTotal is the allocatable nvidia.com/gpu; GPUUsed what the node's active pods request.
	GPUTotal int64  `json:"gpuTotal"`
	GPUUsed  int64  `json:"gpuUsed"`
	GPUFree  int64  `json:"gpuFree"`
	GPUType  string `json:"gpuType"`
	// Pool is the node's g8s.host/pool label, or "default" for a node in no pool.
	Pool       string   `json:"pool"`
	BoundPools []string `json:"boundPools"`
	// CPU and Memory are the allocatable quantities, e.g. "64" and "256Gi".
	CPU       string    `json:"cpu"`
	Memory    string    `json:"memory"`
	CreatedAt time.Time `json:"createdAt"`
	// G8sLabels are the node's g8s.host/ labels (the node labeler's and the pool's), sorted
	// by key.
	G8sLabels []Label `json:"g8sLabels"`
}

// NodeDetail is one node in full, the answer of GET /api/v1/nodes/{name}.
type NodeDetail struct {
	NodeName      string        `json:"nodeName"`
	Status        string        `json:"status"`
	Unschedulable bool          `json:"unschedulable"`
	GPUType       string        `json:"gpuType"`
	Pool          string        `json:"pool"`
	BoundPools    []string      `json:"boundPools"`
	Resources     NodeResources `json:"resources"`
	// Labels are all the node's labels, sorted by key.
	Labels    []Label   `json:"labels"`
	CreatedAt time.Time `json:"createdAt"`
	// LastUpdatedAt is the latest heartbeat of the node's conditions.
	LastUpdatedAt *time.Time `json:"lastUpdatedAt"`
	// Pods are the node's active pods that request GPUs, by namespace and name.
	Pods []NodePod `json:"pods"`
}

// NodePod is a pod of a NodeDetail that uses GPUs.
type NodePod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// JobID is the gpuctl job the pod belongs to; "" for a pod that gpuctl did not render.
	JobID string `json:"jobId"`
	// GPU is the pod's nvidia.com/gpu request; Status its status in words (PodStatus).
	GPU    int64  `json:"gpu"`
	Status string `json:"status"`
}

// NodeResources are a node's allocatable resources and what its active pods request.
type NodeResources struct {
	CPUTotal    float64 `json:"cpuTotal"`
	CPUUsed     float64 `json:"cpuUsed"`
	MemoryTotal string  `json:"memoryTotal"`
	MemoryUsed  string  `json:"memoryUsed"`
	GPUTotal    int64   `json:"gpuTotal"`
	GPUUsed     int64   `json:"gpuUsed"`
	GPUFree     int64   `json:"gpuFree"`
}

// Label is one label of a node.
type Label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// NodeFilter selects nodes. Its zero value selects every node, on one page.
type NodeFilter struct {
	// Pool is a pool ("default" for the nodes in no pool); "" for any.
	Pool string
	// GPUType is a GPU type in any spelling that render.NormalizeGPUType accepts, with or
	// without the g8s.host/ prefix; "" for any.
	GPUType string
	// Status is Ready or NotReady in any case, with or without a space, dash or underscore;
	// "" for any.
	Status string
	// Page is the page of the matching nodes to return.
	Page Page
}

// nodeMatcher is a checked NodeFilter.
type nodeMatcher struct{ pool, gpuType, status string }

func (f NodeFilter) matcher() (nodeMatcher, error) {
	m := nodeMatcher{pool: f.Pool}
	if len(validation.IsValidLabelValue(m.pool)) > 0 {
		return m, filterErrorf("pool", "%q is not a valid pool name", m.pool)
	}
	// The type is also written as "g8s.host/a100-80g".
	m.gpuType = render.NormalizeGPUType(strings.TrimPrefix(f.GPUType, keys.Prefix))
	if len(validation.IsValidLabelValue(m.gpuType)) > 0 {
		return m, filterErrorf("gpuType", "%q is not a valid GPU type", f.GPUType)
	}
	switch s := normalizeWord(f.Status); s {
	case "":
	case "ready":
		m.status = NodeReady
	case "notready":
		m.status = NodeNotReady
	default:
		return m, filterErrorf("status", "want Ready or NotReady, got %q", f.Status)
	}
	return m, nil
}

func (m nodeMatcher) matches(n *corev1.Node) bool {
	return (m.pool == "" || nodePool(n) == m.pool) &&
		(m.gpuType == "" || n.Labels[keys.GPUType] == m.gpuType) &&
		(m.status == "" || nodeStatus(n) == m.status)
}

// Nodes lists the page of the nodes that the filter selects, by name. A filter value it
// refuses is a *FilterError.
func (r *Reader) Nodes(ctx context.Context, f NodeFilter) (NodeList, error) {
	m, err := f.matcher()
	if err != nil {
		return NodeList{}, err
	}
	nodes, err := r.ObjectSource().Nodes(ctx)
	if err != nil {
		return NodeList{}, fmt.Errorf("list nodes: %w", err)
	}
	var matched []*corev1.Node
	for _, n := range nodes {
		if m.matches(n) {
			matched = append(matched, n)
		}
	}
	sort.Slice(matched, func(i, j int) bool { return matched[i].Name < matched[j].Name })
	items := paginate(matched, f.Page)
	out := NodeList{Total: len(matched), Page: f.Page.number(), PageSize: f.Page.Size, Items: []NodeSummary{}}
	if len(items) > 0 {
		usage, err := r.usageByNode(ctx, "")
		if err != nil {
			return NodeList{}, err
		}
		for _, n := range items {
			out.Items = append(out.Items, nodeSummary(n, usage[n.Name]))
		}
	}
	return out, nil
}

func nodeSummary(n *corev1.Node, used requests) NodeSummary {
	total := allocatableGPUs(n)
	cpu, mem := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Allocatable[corev1.ResourceMemory]
	return NodeSummary{NodeName: n.Name, Status: nodeStatus(n), Unschedulable: n.Spec.Unschedulable,
		GPUTotal: total, GPUUsed: used.gpu, GPUFree: max(0, total-used.gpu), GPUType: n.Labels[keys.GPUType],
		Pool: nodePool(n), BoundPools: []string{nodePool(n)}, CPU: cpu.String(), Memory: mem.String(),
		CreatedAt: n.CreationTimestamp.UTC(), G8sLabels: sortedLabels(n.Labels, keys.Prefix)}
}

// sortedLabels are the labels whose keys start with prefix, sorted by key.
func sortedLabels(l map[string]string, prefix string) []Label {
	out := []Label{}
	for k, v := range l {
		if strings.HasPrefix(k, prefix) {
			out = append(out, Label{Key: k, Value: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Node reads one node, with what its active pods request. An unknown node is a
// *NotFoundError.
func (r *Reader) Node(ctx context.Context, name string) (NodeDetail, error) {
	n, err := r.ObjectSource().Node(ctx, name)
	if apierrors.IsNotFound(err) {
		return NodeDetail{}, &NotFoundError{Kind: "node", Name: name}
	}
	if err != nil {
		return NodeDetail{}, fmt.Errorf("node %s: get: %w", name, err)
	}
	pods, err := r.activePods(ctx, name)
	if err != nil {
		return NodeDetail{}, fmt.Errorf("node %s: %w", name, err)
	}
	d := nodeDetail(n, usageOf(pods)[name])
	for _, p := range pods {
		if gpu := requestsOf(&p.Spec).gpu; gpu > 0 {
			d.Pods = append(d.Pods, NodePod{Namespace: p.Namespace, Name: p.Name, JobID: podJobID(p), GPU: gpu, Status: PodStatus(p)})
		}
	}
	sort.Slice(d.Pods, func(i, j int) bool {
		a, b := d.Pods[i], d.Pods[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	return d, nil
}

func nodeDetail(n *corev1.Node, used requests) NodeDetail {
	sum := nodeSummary(n, used)
	cpu, mem := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Allocatable[corev1.ResourceMemory]
	d := NodeDetail{NodeName: n.Name, Status: sum.Status, Unschedulable: sum.Unschedulable,
		GPUType: sum.GPUType, Pool: sum.Pool, BoundPools: sum.BoundPools,
		Resources: NodeResources{CPUTotal: cores(cpu), CPUUsed: cores(used.cpu), MemoryTotal: mem.String(),
			MemoryUsed: used.memory.String(), GPUTotal: sum.GPUTotal, GPUUsed: sum.GPUUsed, GPUFree: sum.GPUFree},
		CreatedAt: sum.CreatedAt, Pods: []NodePod{}}
	d.Labels = sortedLabels(n.Labels, "")
	for _, c := range n.Status.Conditions {
		if t := c.LastHeartbeatTime; !t.IsZero() && (d.LastUpdatedAt == nil || t.After(*d.LastUpdatedAt)) {
			d.LastUpdatedAt = timePtr(&t)
		}
	}
	return d
}

// nodeStatus is Ready when the node's Ready condition is True, else NotReady.
func nodeStatus(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return NodeReady
		}
	}
	return NodeNotReady
}

// nodePool is the node's pool: its g8s.host/pool label, or the default pool.
func nodePool(n *corev1.Node) string {
	if p := n.Labels[keys.Pool]; p != "" {
		return p
	}
	return keys.DefaultPool
}
