package usage

import (
	"context"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// nodeGPULabels name a GPU on its node, whatever pod holds it.
const nodeGPULabels = "Hostname, hostname, gpu, UUID, GPU_I_ID"

// aggLabel tells the sums from the counts in the one answer of PoolSeries.
const aggLabel = "gpuctl_agg"

// PoolSeries reads the GPU utilization of pools from start to end: per pool (name → its
// nodes' names), per step, the average utilization in percent of the GPUs on its nodes
// (dcgm-exporter's Hostname or hostname label). It sends one query for every pool together:
// the sum and the count of the GPUs' utilization per node. A pool none of whose GPUs reports
// has no points.
func (c *Client) PoolSeries(ctx context.Context, pools map[string][]string, start, end time.Time, step time.Duration) (map[string][]Point, error) {
	out := make(map[string][]Point, len(pools))
	if err := CheckRange(start, end, step); err != nil {
		return out, err
	}
	poolOf := map[string]string{} // node → pool
	var nodes []string
	for pool, ns := range pools {
		out[pool] = []Point{}
		for _, n := range ns {
			if _, dup := poolOf[n]; !dup {
				poolOf[n] = pool
				nodes = append(nodes, n)
			}
		}
	}
	if len(nodes) == 0 {
		return out, nil
	}
	m, err := c.queryRange(ctx, poolQuery(nodes, c.selector), promv1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return out, err
	}
	sum, n := map[string]map[int64]float64{}, map[string]map[int64]float64{}
	for _, ss := range m {
		pool, ok := poolOf[nodeOf(ss.Metric)]
		if !ok {
			continue
		}
		acc := sum
		if ss.Metric[aggLabel] == "count" {
			acc = n
		}
		if acc[pool] == nil {
			acc[pool] = map[int64]float64{}
		}
		for _, p := range ss.Values {
			acc[pool][int64(p.Timestamp)] += finite(p.Value)
		}
	}
	for pool := range pools {
		out[pool] = ratioPoints(sum[pool], n[pool])
	}
	return out, nil
}

// poolQuery is the PromQL of the utilization's sum and count per node of these nodes (and
// the administrator's selector), told apart by the label gpuctl_agg ("sum", "count").
func poolQuery(nodes []string, selector string) string {
	re := alternation(nodes)
	if selector != "" {
		selector = "," + selector
	}
	sel := func(metric string) string {
		return "(" + metric + "{Hostname=~" + re + selector + "} or " + metric + "{hostname=~" + re + selector + "})"
	}
	// one series per GPU (or MIG instance): a GPU scraped twice is not counted twice
	util := by("max", nodeGPULabels, "("+sel(MetricGPUUtil)+" or ("+sel(MetricEngineActive)+" * 100))")
	tag := func(agg string) string {
		return `label_replace(` + by(agg, "Hostname, hostname", util) + `, "` + aggLabel + `", "` + agg + `", "", "")`
	}
	return tag("sum") + " or " + tag("count")
}
