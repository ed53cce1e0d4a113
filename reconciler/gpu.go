package reconciler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
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

// gpuDeltas sums GPUs per namespace and pool before (live) and after (desired or predicted).
func gpuDeltas(changes []*Change) []GPUDelta {
	type key struct{ ns, pool string }
	sums := map[key]*GPUDelta{}
	// add counts u's GPUs before, after, or both (an object found up to date is both).
	add := func(c *Change, u *unstructured.Unstructured, before, after bool) {
		g, pool := c.gpus, c.pool
		// prepare counted the desired object's GPUs, the list those of a prune kept as metadata
		if (u != c.Desired || c.key == "") && !(c.liveCounted && u == c.Live) {
			if g = object.GPUs(u); g > 0 {
				pool = poolOf(u)
			}
		}
		if g == 0 {
			return
		}
		k := key{c.Object.Namespace, pool}
		if u != c.Desired {
			k.ns = u.GetNamespace()
		}
		d := sums[k]
		if d == nil {
			d = &GPUDelta{Namespace: k.ns, Pool: k.pool}
			sums[k] = d
		}
		if after {
			d.After += g
		}
		if before {
			d.Before += g
		}
	}
	for _, c := range changes {
		before := c.Live
		if c.liveSeen {
			before = c.Desired // found up to date, not kept: same labels and requests
		}
		if c.Action == ActionDelete {
			add(c, before, true, false)
			continue
		}
		after := c.Desired
		switch {
		case c.Error != "" || c.unchecked || c.Desired == nil: // not applied or not read, or a prune skipped: stays as it is
			after = before
		case c.Predicted != nil:
			after = c.Predicted
		}
		if after == before {
			add(c, before, true, true)
		} else {
			add(c, before, true, false)
			add(c, after, false, true)
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

// poolOf is the pool whose GPUs an object counts in: its pool label, or the default pool.
func poolOf(u *unstructured.Unstructured) string {
	if pool := object.LabelOf(u, keys.Pool); pool != "" {
		return pool
	}
	return keys.DefaultPool
}
