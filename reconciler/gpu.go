package reconciler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// GPUDelta is the number of GPUs that the workloads of one namespace and pool request,
// before and after a change.
type GPUDelta struct {
	Namespace string `json:"namespace"`
	Pool      string `json:"pool"`
	Before    int64  `json:"before"`
	After     int64  `json:"after"`
}

// GPUsRequested returns the GPUs that a workload object requests while it runs in full:
// pods (parallelism, replicas) times the nvidia.com/gpu of each pod. Other objects request 0.
func GPUsRequested(u *unstructured.Unstructured) int64 {
	if u == nil {
		return 0
	}
	var pods int64 = 1
	switch u.GetKind() {
	case "Job":
		if p, found, _ := unstructured.NestedInt64(u.Object, "spec", "parallelism"); found {
			pods = p
		}
	case "Deployment", "StatefulSet", "ReplicaSet":
		if r, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); found {
			pods = r
		}
	case "Pod":
		return podGPUs(u.Object["spec"])
	default:
		return 0
	}
	spec, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template", "spec")
	return pods * podGPUs(spec)
}

func podGPUs(spec any) int64 {
	s, _ := spec.(map[string]any)
	containers, _ := s["containers"].([]any)
	var n int64
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		v, found, _ := unstructured.NestedFieldNoCopy(cm, "resources", "limits", keys.ResourceGPU)
		if !found {
			v, _, _ = unstructured.NestedFieldNoCopy(cm, "resources", "requests", keys.ResourceGPU)
		}
		if v == nil {
			continue
		}
		if q, err := resource.ParseQuantity(fmt.Sprint(v)); err == nil {
			n += q.Value()
		}
	}
	return n
}

// gpuDeltas sums GPUs per namespace and pool before (live) and after (desired or predicted).
func gpuDeltas(changes []*Change) []GPUDelta {
	type key struct{ ns, pool string }
	sums := map[key]*GPUDelta{}
	add := func(u *unstructured.Unstructured, after bool) {
		g := GPUsRequested(u)
		if g == 0 {
			return
		}
		pool := u.GetLabels()[keys.Pool]
		if pool == "" {
			pool = keys.DefaultPool
		}
		k := key{u.GetNamespace(), pool}
		d := sums[k]
		if d == nil {
			d = &GPUDelta{Namespace: k.ns, Pool: k.pool}
			sums[k] = d
		}
		if after {
			d.After += g
		} else {
			d.Before += g
		}
	}
	for _, c := range changes {
		before := c.Live
		if c.liveSeen {
			before = c.Desired // found up to date, not kept: same labels and requests
		}
		add(before, false)
		if c.Action != ActionDelete {
			after := c.Desired
			switch {
			case c.Error != "" || c.unchecked || c.Desired == nil: // not applied or not read, or a prune skipped: stays as it is
				after = before
			case c.Predicted != nil:
				after = c.Predicted
			}
			add(after, true)
		}
	}
	out := make([]GPUDelta, 0, len(sums))
	for _, d := range sums {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pool != out[j].Pool {
			return out[i].Pool < out[j].Pool
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out
}

// gpuSummary sums the deltas per pool: "+8 in training-pool, -1 in inference-pool".
func gpuSummary(ds []GPUDelta) string {
	perPool := map[string]int64{}
	var pools []string
	for _, d := range ds {
		if _, ok := perPool[d.Pool]; !ok {
			pools = append(pools, d.Pool)
		}
		perPool[d.Pool] += d.After - d.Before
	}
	var parts []string
	for _, p := range pools {
		if n := perPool[p]; n != 0 {
			parts = append(parts, fmt.Sprintf("%+d in %s", n, p))
		}
	}
	return strings.Join(parts, ", ")
}
