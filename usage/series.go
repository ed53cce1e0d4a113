package usage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
)

// MaxPoints bounds the points of one series of a range (Prometheus refuses more than 11,000).
const MaxPoints = 11000

// Point is one value of a series at a time: the seed's {"timestamp", "value"}.
type Point struct {
	Timestamp time.Time `json:"timestamp"`
	Value     float64   `json:"value"`
}

// Series are a job's metrics over a range: its GPU utilization in percent averaged over its
// GPUs, the GPU memory its GPUs use in GiB, and their power in watts; and the same per pod
// (per rank of a multi-node job).
type Series struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Step is the distance between points, a Go duration.
	Step           string      `json:"step"`
	GPUUtilization []Point     `json:"gpuUtilization"`
	MemoryUsage    []Point     `json:"memoryUsage"`
	Power          []Point     `json:"power"`
	Pods           []PodSeries `json:"pods"`
}

// PodSeries are one pod's series.
type PodSeries struct {
	Pod            string  `json:"pod"`
	GPUUtilization []Point `json:"gpuUtilization"`
	MemoryUsage    []Point `json:"memoryUsage"`
	Power          []Point `json:"power"`
}

// DefaultStep picks a step for a range: about 120 points, at least 15 s.
func DefaultStep(d time.Duration) time.Duration {
	step := (d / 120).Truncate(time.Second)
	return max(step, 15*time.Second)
}

// CheckRange refuses a range that is empty or would have more than MaxPoints points.
func CheckRange(start, end time.Time, step time.Duration) error {
	if !end.After(start) {
		return fmt.Errorf("the range ends (%s) before it starts (%s)", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	if step <= 0 {
		return fmt.Errorf("step %s: want a positive duration", step)
	}
	if n := end.Sub(start) / step; n > MaxPoints {
		return fmt.Errorf("a range of %s at step %s has %d points, more than %d: use a larger step", end.Sub(start), step, n, MaxPoints)
	}
	return nil
}

// JobSeries reads the series of the pods of a job (namespace/name each) from start to end.
func (c *Client) JobSeries(ctx context.Context, pods []string, start, end time.Time, step time.Duration) (Series, error) {
	out := Series{Start: start, End: end, Step: step.String(), GPUUtilization: []Point{}, MemoryUsage: []Point{}, Power: []Point{}, Pods: []PodSeries{}}
	if err := CheckRange(start, end, step); err != nil {
		return out, err
	}
	if len(pods) == 0 {
		return out, nil
	}
	s := c.scoped(Scope{Pods: pods})
	queries := []string{
		by("sum", podLabels, perGPU(s.util("", 0))),
		by("count", podLabels, perGPU(s.util("", 0))),
		by("sum", podLabels, perGPU(s.series(MetricFBUsed, "", 0))),
		by("sum", podLabels, perGPU(s.series(MetricPower, "", 0))),
	}
	r := promv1.Range{Start: start, End: end, Step: step}
	results := make([]model.Matrix, len(queries))
	g, gctx := errgroup.WithContext(ctx)
	for i, q := range queries {
		g.Go(func() error {
			m, err := c.queryRange(gctx, q, r)
			results[i] = m
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return out, err
	}
	type acc struct{ utilSum, utilN, mem, power map[int64]float64 }
	newAcc := func() *acc {
		return &acc{map[int64]float64{}, map[int64]float64{}, map[int64]float64{}, map[int64]float64{}}
	}
	job, perPod := newAcc(), map[string]*acc{}
	add := func(m model.Matrix, pick func(*acc) map[int64]float64) {
		for _, ss := range m {
			k := podKey(ss.Metric)
			if k == "" {
				continue
			}
			a := perPod[k]
			if a == nil {
				a = newAcc()
				perPod[k] = a
			}
			for _, p := range ss.Values {
				v := finite(p.Value)
				pick(a)[int64(p.Timestamp)] += v
				pick(job)[int64(p.Timestamp)] += v
			}
		}
	}
	add(results[0], func(a *acc) map[int64]float64 { return a.utilSum })
	add(results[1], func(a *acc) map[int64]float64 { return a.utilN })
	add(results[2], func(a *acc) map[int64]float64 { return a.mem })
	add(results[3], func(a *acc) map[int64]float64 { return a.power })
	fill := func(a *acc) (util, mem, power []Point) {
		util = ratioPoints(a.utilSum, a.utilN)
		mem = points(a.mem, 1.0/1024)
		power = points(a.power, 1)
		return
	}
	out.GPUUtilization, out.MemoryUsage, out.Power = fill(job)
	for k, a := range perPod {
		_, name, _ := strings.Cut(k, "/")
		ps := PodSeries{Pod: name}
		ps.GPUUtilization, ps.MemoryUsage, ps.Power = fill(a)
		out.Pods = append(out.Pods, ps)
	}
	sort.Slice(out.Pods, func(i, j int) bool { return out.Pods[i].Pod < out.Pods[j].Pod })
	return out, nil
}

// points turns a map of millisecond timestamps to values into sorted points, scaled.
func points(m map[int64]float64, scale float64) []Point {
	out := make([]Point, 0, len(m))
	for ts, v := range m {
		out = append(out, Point{Timestamp: time.UnixMilli(ts).UTC(), Value: v * scale})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	return out
}

// ratioPoints divides sums by counts per timestamp.
func ratioPoints(sum, n map[int64]float64) []Point {
	out := make([]Point, 0, len(sum))
	for ts, v := range sum {
		if c := n[ts]; c > 0 {
			out = append(out, Point{Timestamp: time.UnixMilli(ts).UTC(), Value: v / c})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	return out
}

// Stats are a series' minimum, average and maximum; N counts its points.
type Stats struct {
	Min float64 `json:"min"`
	Avg float64 `json:"avg"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

// StatsOf returns the stats of points (zero for none).
func StatsOf(ps []Point) Stats {
	var s Stats
	for i, p := range ps {
		if i == 0 || p.Value < s.Min {
			s.Min = p.Value
		}
		if i == 0 || p.Value > s.Max {
			s.Max = p.Value
		}
		s.Avg += p.Value
	}
	if s.N = len(ps); s.N > 0 {
		s.Avg /= float64(s.N)
	}
	return s
}
