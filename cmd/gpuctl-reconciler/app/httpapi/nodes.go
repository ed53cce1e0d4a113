package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Node statuses, as kubectl shows them.
const (
	NodeReady    = "Ready"
	NodeNotReady = "NotReady"
)

// NodeList is the answer of GET /api/v1/nodes.
type NodeList struct {
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
}

// NodeDetail is the answer of GET /api/v1/nodes/{name}.
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

// nodeQuery is the filter of GET /api/v1/nodes.
type nodeQuery struct {
	pool, gpuType, status string
	page                  page
}

func parseNodeQuery(q url.Values) (nodeQuery, error) {
	var nq nodeQuery
	var err error
	if nq.page, err = parsePage(q); err != nil {
		return nq, err
	}
	if nq.pool = q.Get("pool"); len(validation.IsValidLabelValue(nq.pool)) > 0 {
		return nq, errorf(http.StatusBadRequest, "pool: %q is not a valid pool name", nq.pool)
	}
	// The seed writes the type as "g8s.host/a100-80g" too.
	nq.gpuType = render.NormalizeGPUType(strings.TrimPrefix(q.Get("gpuType"), keys.Prefix))
	if len(validation.IsValidLabelValue(nq.gpuType)) > 0 {
		return nq, errorf(http.StatusBadRequest, "gpuType: %q is not a valid GPU type", q.Get("gpuType"))
	}
	switch s := normalizeWord(q.Get("status")); s {
	case "":
	case "ready":
		nq.status = NodeReady
	case "notready":
		nq.status = NodeNotReady
	default:
		return nq, errorf(http.StatusBadRequest, "status: want Ready or NotReady, got %q", q.Get("status"))
	}
	return nq, nil
}

func (q nodeQuery) matches(n *corev1.Node) bool {
	return (q.pool == "" || nodePool(n) == q.pool) &&
		(q.gpuType == "" || n.Labels[keys.GPUType] == q.gpuType) &&
		(q.status == "" || nodeStatus(n) == q.status)
}

// listNodes serves GET /api/v1/nodes.
func (s *server) listNodes(w http.ResponseWriter, r *http.Request) error {
	q, err := parseNodeQuery(r.URL.Query())
	if err != nil {
		return err
	}
	kube, err := s.kube()
	if err != nil {
		return err
	}
	nodes, err := kube.CoreV1().Nodes().List(r.Context(), metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var matched []*corev1.Node
	for i := range nodes.Items {
		if q.matches(&nodes.Items[i]) {
			matched = append(matched, &nodes.Items[i])
		}
	}
	sort.Slice(matched, func(i, j int) bool { return matched[i].Name < matched[j].Name })
	items := paginate(matched, q.page)
	out := NodeList{Total: len(matched), Page: q.page.number, PageSize: q.page.size, Items: []NodeSummary{}}
	if len(items) > 0 {
		usage, err := s.usageByNode(r.Context(), "")
		if err != nil {
			return err
		}
		for _, n := range items {
			out.Items = append(out.Items, nodeSummary(n, usage[n.Name]))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func nodeSummary(n *corev1.Node, used requests) NodeSummary {
	total := allocatableGPUs(n)
	cpu, mem := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Allocatable[corev1.ResourceMemory]
	return NodeSummary{NodeName: n.Name, Status: nodeStatus(n), Unschedulable: n.Spec.Unschedulable,
		GPUTotal: total, GPUUsed: used.gpu, GPUFree: max(0, total-used.gpu), GPUType: n.Labels[keys.GPUType],
		Pool: nodePool(n), BoundPools: []string{nodePool(n)}, CPU: cpu.String(), Memory: mem.String(),
		CreatedAt: n.CreationTimestamp.UTC()}
}

// getNode serves GET /api/v1/nodes/{name}.
func (s *server) getNode(w http.ResponseWriter, r *http.Request) error {
	kube, err := s.kube()
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	n, err := kube.CoreV1().Nodes().Get(r.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return errorf(http.StatusNotFound, "unknown node %q", name)
	}
	if err != nil {
		return fmt.Errorf("node %s: get: %w", name, err)
	}
	usage, err := s.usageByNode(r.Context(), name)
	if err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	writeJSON(w, http.StatusOK, nodeDetail(n, usage[name]))
	return nil
}

func nodeDetail(n *corev1.Node, used requests) NodeDetail {
	sum := nodeSummary(n, used)
	cpu, mem := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Allocatable[corev1.ResourceMemory]
	d := NodeDetail{NodeName: n.Name, Status: sum.Status, Unschedulable: sum.Unschedulable,
		GPUType: sum.GPUType, Pool: sum.Pool, BoundPools: sum.BoundPools,
		Resources: NodeResources{CPUTotal: cores(cpu), CPUUsed: cores(used.cpu), MemoryTotal: mem.String(),
			MemoryUsed: used.memory.String(), GPUTotal: sum.GPUTotal, GPUUsed: sum.GPUUsed, GPUFree: sum.GPUFree},
		Labels: []Label{}, CreatedAt: sum.CreatedAt}
	for k, v := range n.Labels {
		d.Labels = append(d.Labels, Label{Key: k, Value: v})
	}
	sort.Slice(d.Labels, func(i, j int) bool { return d.Labels[i].Key < d.Labels[j].Key })
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
