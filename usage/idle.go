package usage

import (
	"context"
	"sort"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
)

// IdleOptions configure the idle audit.
type IdleOptions struct {
	// Threshold is the utilization in percent below which a GPU is idle
	// (DefaultIdleThreshold when 0).
	Threshold float64
	// Window is how far back the audit looks (3h when 0); Step the resolution of its runs
	// (DefaultStep of the window when 0). Each point is the busiest GPU's highest value within
	// its step, so a burst shorter than the step still ends an idle run.
	Window time.Duration
	Step   time.Duration
	// For is the shortest idle run that lists a job (30m when 0).
	For time.Duration
}

func (o IdleOptions) withDefaults() IdleOptions {
	if o.Threshold <= 0 {
		o.Threshold = DefaultIdleThreshold
	}
	if o.Window <= 0 {
		o.Window = 3 * time.Hour
	}
	if o.Step <= 0 {
		o.Step = DefaultStep(o.Window)
	}
	if o.For <= 0 {
		o.For = 30 * time.Minute
	}
	return o
}

// IdleJob is a row of the idle audit.
type IdleJob struct {
	JobID     string `json:"jobId"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Pool      string `json:"pool"`
	GPUType   string `json:"gpuType"`
	// GPUs is what the job's running pods request.
	GPUs int64 `json:"gpus"`
	// Longest is the job's longest run in the window during which all its GPUs were below
	// the threshold, from LongestFrom to LongestTo; Now is the run that reaches the end of
	// the window (0 when the job is busy at the end).
	Longest     Duration  `json:"longestIdle"`
	LongestFrom time.Time `json:"longestIdleFrom,omitzero"`
	LongestTo   time.Time `json:"longestIdleTo,omitzero"`
	Now         Duration  `json:"idleNow"`
	// NowPeak is the highest utilization of its GPUs during the run going on now (0 without
	// one): what "idle 0 % for 2h" says.
	NowPeak float64 `json:"idleNowPeak,omitempty"`
	// AvgUtil is the utilization averaged over the window and the job's GPUs.
	AvgUtil float64 `json:"avgUtil"`
	// MemUsedMiB is the GPU memory its GPUs hold now: a loaded model holds memory at 0 %.
	MemUsedMiB float64 `json:"memUsedMiB"`
	// NoSeries is set for a job whose GPUs have no series at all in the window (no
	// exporter on the node, or one without pod labels): its GPUs are allocated, their use
	// is unknown.
	NoSeries bool `json:"noSeries"`
}

// Duration is a time.Duration that JSON writes as a Go duration string ("1h30m0s").
type Duration time.Duration

// MarshalText writes the duration as Go does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Idle audits the running GPU pods of pods over the window
// that ends now: each job whose longest idle run is at least o.For, or whose GPUs have no
// series, sorted by the idle run going on now, then the longest, longest first.
func (c *Client) Idle(ctx context.Context, s Scope, pods []Pod, o IdleOptions) ([]IdleJob, error) {
	o = o.withDefaults()
	s = c.scoped(s)
	// Not truncated: the last point is now, where a pod that started a moment ago has one.
	end := c.now()
	// each point covers the step that ends at it: the first ends one step into the window,
	// so that an idle window is a run of Window, not one step more
	start := end.Add(-o.Window).Add(o.Step)
	if err := CheckRange(start, end, o.Step); err != nil {
		return nil, err
	}
	var runs model.Matrix
	var avg, mem model.Vector
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		runs, err = c.queryRange(gctx, by("max", podLabels, s.util("max_over_time", o.Step)), promv1.Range{Start: start, End: end, Step: o.Step})
		return err
	})
	g.Go(func() (err error) {
		avg, err = c.query(gctx, by("avg", podLabels, perGPU(s.util("avg_over_time", o.Window))), end)
		return err
	})
	g.Go(func() (err error) {
		mem, err = c.query(gctx, by("sum", podLabels, perGPU(s.series(MetricFBUsed, "last_over_time", DefaultWindow))), end)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return idleJobs(pods, runs, avg, mem, o, end), nil
}

// idleJobs is Idle's arithmetic on the answers.
func idleJobs(pods []Pod, runs model.Matrix, avg, mem model.Vector, o IdleOptions, end time.Time) []IdleJob {
	// A pod has several series when the plain labels name the exporter (exported_ labels)
	// and its pod was replaced within the window: its runs are all of theirs, its average
	// their mean, its memory the largest (each series holds all of the pod's GPUs).
	podRuns := map[string][]model.SamplePair{}
	for _, ss := range runs {
		if k := podKey(ss.Metric); k != "" {
			podRuns[k] = append(podRuns[k], ss.Values...)
		}
	}
	podAvg, podAvgN, podMem := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, smp := range avg {
		k := podKey(smp.Metric)
		podAvg[k] += finite(smp.Value)
		podAvgN[k]++
	}
	for _, smp := range mem {
		k := podKey(smp.Metric)
		podMem[k] = max(podMem[k], finite(smp.Value))
	}
	type job struct {
		row     IdleJob
		busiest map[int64]float64 // the busiest pod's value at each step
		avgSum  float64
		avgN    int64
	}
	jobs := map[string]*job{}
	var order []string
	for _, p := range pods {
		if !p.holdsGPUs() {
			continue
		}
		j := jobs[p.JobID]
		if j == nil {
			j = &job{row: IdleJob{JobID: p.JobID, Namespace: p.Namespace, Name: p.Name, Kind: p.Kind, Pool: p.Pool, GPUType: p.GPUType},
				busiest: map[int64]float64{}}
			jobs[p.JobID] = j
			order = append(order, p.JobID)
		}
		j.row.GPUs += p.GPU
		k := p.Namespace + "/" + p.Pod
		for _, v := range podRuns[k] {
			ts := int64(v.Timestamp)
			if old, ok := j.busiest[ts]; !ok || finite(v.Value) > old {
				j.busiest[ts] = finite(v.Value)
			}
		}
		if n := podAvgN[k]; n > 0 {
			j.avgSum += podAvg[k] / n * float64(p.GPU)
			j.avgN += p.GPU
		}
		j.row.MemUsedMiB += podMem[k]
	}
	var out []IdleJob
	for _, id := range order {
		j := jobs[id]
		if len(j.busiest) == 0 {
			j.row.NoSeries = true
			out = append(out, j.row)
			continue
		}
		if j.avgN > 0 {
			j.row.AvgUtil = j.avgSum / float64(j.avgN)
		}
		r := longestRun(j.busiest, o.Threshold, o.Step, end)
		j.row.Longest, j.row.Now, j.row.NowPeak = Duration(r.longest), Duration(r.now), r.nowPeak
		if r.longest > 0 {
			j.row.LongestFrom, j.row.LongestTo = r.from, r.to
		}
		if r.longest >= o.For {
			out = append(out, j.row)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].NoSeries != out[b].NoSeries {
			return !out[a].NoSeries
		}
		if out[a].Now != out[b].Now {
			return out[a].Now > out[b].Now
		}
		return out[a].Longest > out[b].Longest
	})
	return out
}

// run is the result of longestRun.
type run struct {
	longest  time.Duration
	from, to time.Time
	now      time.Duration
	nowPeak  float64 // the highest value during the run now
}

// longestRun finds the longest run of consecutive steps below threshold. Each point covers
// the step that ends at it; a missing step ends a run. now is the run that reaches end.
func longestRun(values map[int64]float64, threshold float64, step time.Duration, end time.Time) run {
	ts := make([]int64, 0, len(values))
	for t := range values {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	var r run
	var curFrom int64
	var cur time.Duration
	var peak float64
	prev := int64(-1)
	for _, t := range ts {
		idle := values[t] < threshold
		contiguous := prev >= 0 && time.Duration(t-prev)*time.Millisecond == step
		switch {
		case !idle:
			cur = 0
		case cur > 0 && contiguous:
			cur += step
			peak = max(peak, values[t])
		default:
			cur, curFrom, peak = step, t-step.Milliseconds(), values[t]
		}
		if cur > r.longest {
			r.longest, r.from, r.to = cur, time.UnixMilli(curFrom).UTC(), time.UnixMilli(t).UTC()
		}
		prev = t
	}
	if len(ts) > 0 && time.Duration(end.UnixMilli()-ts[len(ts)-1])*time.Millisecond < step/2 { // the point at the end
		r.now = cur
		if cur > 0 {
			r.nowPeak = peak
		}
	}
	return r
}
