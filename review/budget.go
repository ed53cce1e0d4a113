package review

import (
	"fmt"
	"sort"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AnyGPUType is the GPU type of workloads that do not ask for one.
const AnyGPUType = "any"

// BudgetLine is the GPUs that the workloads of one namespace request in one pool, of one GPU
// type, before and after.
type BudgetLine struct {
	Namespace string `json:"namespace"`
	Pool      string `json:"pool"`
	GPUType   string `json:"gpuType"`
	Before    int64  `json:"before"`
	After     int64  `json:"after"`
}

// TeamBudget is the GPUs that one namespace (team) requests in all, and its quota.
type TeamBudget struct {
	Namespace string `json:"namespace"`
	Before    int64  `json:"before"`
	After     int64  `json:"after"`
	// QuotaBefore and QuotaAfter are the requests.nvidia.com/gpu of the namespace's
	// ResourceQuotas; nil when it has none.
	QuotaBefore *int64 `json:"quotaBefore,omitempty"`
	QuotaAfter  *int64 `json:"quotaAfter,omitempty"`
	// Queue is set when the namespace's workloads are queued in a Kueue ClusterQueue (in
	// either revision): its quota is per pool, in Budget.Queues.
	Queue bool `json:"queue,omitempty"`
}

// Budget is the GPUs requested per namespace × pool × GPU type and per namespace, and with
// queueing kueue per queue × pool against the queue's quota there.
type Budget struct {
	Lines []BudgetLine `json:"lines"`
	Teams []TeamBudget `json:"teams"`
	// Queues are the Kueue ClusterQueues per pool (flavor); none without queueing kueue.
	Queues []QueueLine `json:"queues,omitempty"`
	// Before and After are the totals.
	Before int64 `json:"before"`
	After  int64 `json:"after"`
}

// Changed reports whether any line differs.
func (b *Budget) Changed() bool {
	for _, l := range b.Lines {
		if l.Before != l.After {
			return true
		}
	}
	return false
}

type budgetKey struct{ ns, pool, gpuType string }

// ComputeBudget sums the GPUs that the workload objects of both revisions request.
func ComputeBudget(base, head []*unstructured.Unstructured) Budget {
	lines := map[budgetKey]*BudgetLine{}
	teams := map[string]*TeamBudget{}
	add := func(objs []*unstructured.Unstructured, after bool) {
		for _, u := range objs {
			g := object.GPUs(u)
			if g == 0 {
				continue
			}
			k := budgetKey{u.GetNamespace(), poolOf(u), gpuTypeOf(u)}
			l := lines[k]
			if l == nil {
				l = &BudgetLine{Namespace: k.ns, Pool: k.pool, GPUType: k.gpuType}
				lines[k] = l
			}
			t := team(teams, k.ns)
			if after {
				l.After += g
				t.After += g
			} else {
				l.Before += g
				t.Before += g
			}
		}
	}
	add(base, false)
	add(head, true)
	for ns, q := range GPUQuotas(base) {
		team(teams, ns).QuotaBefore = ptr(q)
	}
	for ns, q := range GPUQuotas(head) {
		team(teams, ns).QuotaAfter = ptr(q)
	}
	queues := computeQueues(base, head, teams)
	b := collect(lines, teams)
	if len(queues) > 0 {
		b.Queues = queues
	}
	return b
}

func ptr(n int64) *int64 { return &n }

func team(teams map[string]*TeamBudget, ns string) *TeamBudget {
	t := teams[ns]
	if t == nil {
		t = &TeamBudget{Namespace: ns}
		teams[ns] = t
	}
	return t
}

func collect(lines map[budgetKey]*BudgetLine, teams map[string]*TeamBudget) Budget {
	b := Budget{Lines: []BudgetLine{}, Teams: []TeamBudget{}}
	for _, l := range lines {
		b.Lines = append(b.Lines, *l)
		b.Before += l.Before
		b.After += l.After
	}
	sort.Slice(b.Lines, func(i, j int) bool {
		x, y := b.Lines[i], b.Lines[j]
		if x.Namespace != y.Namespace {
			return x.Namespace < y.Namespace
		}
		if x.Pool != y.Pool {
			return x.Pool < y.Pool
		}
		return x.GPUType < y.GPUType
	})
	for _, t := range teams {
		// A team is a namespace with a quota (a kind: quota user): ResourceQuotas or a Kueue
		// queue in either revision. The GPUs of others (default) are in Lines alone.
		if t.QuotaBefore != nil || t.QuotaAfter != nil || t.Queue {
			b.Teams = append(b.Teams, *t)
		}
	}
	sort.Slice(b.Teams, func(i, j int) bool { return b.Teams[i].Namespace < b.Teams[j].Namespace })
	return b
}

// poolOf returns a workload's pool: its pool label, else its pods' pool node selector, else
// the default pool.
func poolOf(u *unstructured.Unstructured) string {
	if p := u.GetLabels()[keys.Pool]; p != "" {
		return p
	}
	if spec, _, ok := object.PodSpec(u); ok {
		if p, _, _ := unstructured.NestedString(spec, "nodeSelector", keys.Pool); p != "" {
			return p
		}
	}
	return keys.DefaultPool
}

// gpuTypeOf returns the g8s.host/gpu-type node selector of a workload's pods, or AnyGPUType.
func gpuTypeOf(u *unstructured.Unstructured) string {
	if t, ok, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "nodeSelector", keys.GPUType); ok && t != "" {
		return t
	}
	return AnyGPUType
}

// GPUQuotas returns the requests.nvidia.com/gpu of the ResourceQuotas per namespace (the
// smallest when a namespace has several: the tightest binds).
func GPUQuotas(objs []*unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	for _, u := range objs {
		if u.GetKind() != "ResourceQuota" {
			continue
		}
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "hard", keys.QuotaRequestsGPU)
		q, ok := quantity(v)
		if !ok {
			continue
		}
		if cur, ok := out[u.GetNamespace()]; !ok || q < cur {
			out[u.GetNamespace()] = q
		}
	}
	return out
}

// quantity reads a count of GPUs written as a quantity ("8", 8); false when v is absent or
// not a quantity.
func quantity(v any) (int64, bool) {
	if v == nil {
		return 0, false
	}
	q, err := resource.ParseQuantity(fmt.Sprint(v))
	if err != nil {
		return 0, false
	}
	return q.Value(), true
}
