package usage

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
)

// DefaultWindow is the window of gpuctl top when none is given: utilization and power are
// averaged over it.
const DefaultWindow = 5 * time.Minute

// GPU is what one GPU (or MIG instance) did over a window.
type GPU struct {
	// Node is the exporter's Hostname (or hostname) label: the node's name in Kubernetes.
	Node string `json:"node"`
	// Index is the gpu label, UUID the GPU's, MIG the GPU instance id of a MIG instance
	// ("" for a whole GPU); Model is modelName.
	Index string `json:"gpu"`
	UUID  string `json:"uuid"`
	MIG   string `json:"mig,omitempty"`
	Model string `json:"model"`
	// Namespace, Pod and Container hold the GPU; "" for a GPU that no pod holds.
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// Util is the utilization in percent averaged over the window; HasUtil says whether any
	// series gave one.
	Util    float64 `json:"util"`
	HasUtil bool    `json:"hasUtil"`
	// MemUsedMiB and MemTotalMiB are the GPU memory used and in all (used + free), last seen.
	MemUsedMiB  float64 `json:"memUsedMiB"`
	MemTotalMiB float64 `json:"memTotalMiB"`
	// PowerW is the power draw in watts averaged over the window.
	PowerW float64 `json:"powerW"`
}

// PodKey is namespace/name of the pod that holds the GPU, "" for none.
func (g GPU) PodKey() string {
	if g.Pod == "" {
		return ""
	}
	return g.Namespace + "/" + g.Pod
}

// Idle reports whether the GPU's utilization is below threshold (percent).
func (g GPU) Idle(threshold float64) bool { return g.HasUtil && g.Util < threshold }

// GPUs reads every GPU of the scope that the exporter serves now: utilization and power
// averaged over window (DefaultWindow when 0), memory now. Four queries run at once.
func (c *Client) GPUs(ctx context.Context, s Scope, window time.Duration) ([]GPU, error) {
	if window <= 0 {
		window = DefaultWindow
	}
	now := c.now()
	queries := GPUQueries(c.scoped(s), window)
	results := make([]model.Vector, len(queries))
	g, gctx := errgroup.WithContext(ctx)
	for i, q := range queries {
		g.Go(func() error {
			v, err := c.query(gctx, q, now)
			results[i] = v
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	byKey := map[string]*GPU{}
	at := func(m model.Metric) *GPU {
		k := gpuKey(m)
		if g, ok := byKey[k]; ok {
			return g
		}
		g := newGPU(m)
		byKey[k] = g
		return g
	}
	for _, smp := range results[0] {
		g := at(smp.Metric)
		g.Util, g.HasUtil = finite(smp.Value), true
	}
	for _, smp := range results[1] {
		at(smp.Metric).MemUsedMiB = finite(smp.Value)
	}
	free := map[*GPU]float64{}
	for _, smp := range results[2] {
		free[at(smp.Metric)] = finite(smp.Value)
	}
	for _, smp := range results[3] {
		at(smp.Metric).PowerW = finite(smp.Value)
	}
	out := make([]GPU, 0, len(byKey))
	for _, g := range byKey {
		g.MemTotalMiB = g.MemUsedMiB + free[g]
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		if out[i].Index != out[j].Index {
			return out[i].Index < out[j].Index
		}
		return out[i].MIG < out[j].MIG
	})
	return out, nil
}

// GPUQueries are the PromQL queries of GPUs (a benchmark sends them bare, as its floor):
// utilization, memory used, memory free and power of each GPU of the scope, of the series
// the exporter serves now: a GPU's series of a pod that ended within the window (the GPU
// is now another pod's, or no pod's) is not counted beside its current one.
func GPUQueries(s Scope, window time.Duration) []string {
	if window <= 0 {
		window = DefaultWindow
	}
	current := func(metric, fn string) string {
		return "(" + s.series(metric, fn, window) + " and " + s.series(metric, "", 0) + ")"
	}
	return []string{
		by("max", gpuLabels, "("+current(MetricGPUUtil, "avg_over_time")+" or ("+current(MetricEngineActive, "avg_over_time")+" * 100))"),
		by("max", gpuLabels, s.series(MetricFBUsed, "", 0)),
		by("max", gpuLabels, s.series(MetricFBFree, "", 0)),
		by("max", gpuLabels, current(MetricPower, "avg_over_time")),
	}
}

// finite turns NaN and ±Inf into 0.
func finite(v model.SampleValue) float64 {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// podOf returns the namespace, pod and container that a series names, an exported_ label
// winning over the plain one (the plain ones then name the exporter's pod).
func podOf(m model.Metric) (namespace, pod, container string) {
	if p := m["exported_pod"]; p != "" {
		return string(m["exported_namespace"]), string(p), string(m["exported_container"])
	}
	return string(m["namespace"]), string(m["pod"]), string(m["container"])
}

// nodeOf returns the node a series names.
func nodeOf(m model.Metric) string {
	if h := m["Hostname"]; h != "" {
		return string(h)
	}
	return string(m["hostname"])
}

// gpuKey identifies a GPU across queries.
func gpuKey(m model.Metric) string {
	return nodeOf(m) + "\x00" + string(m["UUID"]) + "\x00" + string(m["gpu"]) + "\x00" + string(m["GPU_I_ID"])
}

// podKey is namespace/pod of a series, "" for none.
func podKey(m model.Metric) string {
	ns, pod, _ := podOf(m)
	if pod == "" {
		return ""
	}
	return ns + "/" + pod
}

func newGPU(m model.Metric) *GPU {
	ns, pod, container := podOf(m)
	return &GPU{Node: nodeOf(m), Index: string(m["gpu"]), UUID: string(m["UUID"]), MIG: string(m["GPU_I_ID"]),
		Model: string(m["modelName"]), Namespace: ns, Pod: pod, Container: container}
}
