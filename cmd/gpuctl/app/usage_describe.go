package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/usage"
)

// describe job's Usage section: the job's GPU utilization and memory over its life as
// sparklines, from Prometheus (--prometheus-url) or, with --server and no Prometheus of its
// own, from the daemon's GET /api/v1/jobs/{jobId}/metrics.

// Limits of the Usage section.
const (
	// usageMaxRange bounds the range: the job's life, its last 24 h at most (as the daemon's
	// metrics route has it).
	usageMaxRange = 24 * time.Hour
	// usageMaxRanks is how many ranks (pods) get lines of their own.
	usageMaxRanks = 8
)

// noPrometheusNote is the Usage section without a Prometheus.
const noPrometheusNote = "no Prometheus (--prometheus-url)"

// jobUsage is what the Usage section shows: the series, or one line saying why there are none.
type jobUsage struct {
	series usage.Series
	step   time.Duration
	note   string
	// ranks are the ranks of the job's pods by name.
	ranks map[string]int
}

// usageRange is the range of a job's Usage section: from its start (its creation when it has
// not started) to now, the last usageMaxRange at most, at usage.DefaultStep.
func usageRange(j cluster.JobDetail, now time.Time) (start time.Time, step time.Duration) {
	start = j.CreatedAt
	if j.StartedAt != nil && !j.StartedAt.IsZero() {
		start = *j.StartedAt
	}
	if now.Sub(start) > usageMaxRange {
		start = now.Add(-usageMaxRange)
	}
	if !start.Before(now.Add(-time.Minute)) { // a job that just started, or a clock ahead
		start = now.Add(-time.Minute)
	}
	return start, usage.DefaultStep(now.Sub(start))
}

// jobUsagePods are namespace/name of the job's pods, those of its attempts that are gone
// included (Prometheus keeps their series), with the rank of each.
func jobUsagePods(d cluster.JobDescription) ([]string, map[string]int) {
	var keys []string
	ranks := map[string]int{}
	seen := map[string]bool{}
	add := func(ns, pod string, rank *int) {
		if pod == "" || seen[pod] {
			return
		}
		seen[pod] = true
		if ns == "" {
			ns = d.Job.Namespace
		}
		keys = append(keys, ns+"/"+pod)
		if rank != nil {
			ranks[pod] = *rank
		}
	}
	for _, p := range d.Pods {
		add(p.Namespace, p.Pod, p.Rank)
	}
	for _, a := range d.Job.Attempts {
		add("", a.Pod, a.Rank)
	}
	return keys, ranks
}

// readJobUsage reads the Usage section of a job: from Prometheus when the flags name one,
// else from the daemon's API when m is it, else a note. A failure is a note too: describe
// shows the rest.
func readJobUsage(ctx context.Context, prom *options.Prometheus, m cluster.Model, d cluster.JobDescription, now time.Time) jobUsage {
	pods, ranks := jobUsagePods(d)
	start, step := usageRange(d.Job, now)
	u := jobUsage{step: step, ranks: ranks}
	if len(pods) == 0 {
		u.note = "no pod ran yet"
		return u
	}
	pc, err := prom.Client()
	var series usage.Series
	switch remote, isRemote := m.(*remoteModel); {
	case errors.Is(err, usage.ErrNoPrometheus) && isRemote:
		series, err = remote.jobMetrics(ctx, d.Job.JobID, start, now, step)
	case errors.Is(err, usage.ErrNoPrometheus):
		u.note = noPrometheusNote
		return u
	case err == nil:
		series, err = pc.JobSeries(ctx, pods, start, now, step)
	}
	var answer *httpError
	if errors.As(err, &answer) && answer.Code == http.StatusServiceUnavailable {
		u.note = noPrometheusNote // the daemon has none either: the same line as without --server
		return u
	}
	if err != nil {
		u.note = oneLine(err.Error())
		return u
	}
	u.series = series
	return u
}

// jobMetrics reads a job's series from the daemon: GET jobs/{jobId}/metrics.
func (m *remoteModel) jobMetrics(ctx context.Context, id string, start, end time.Time, step time.Duration) (usage.Series, error) {
	q := url.Values{}
	q.Set("startTime", start.UTC().Format(time.RFC3339))
	q.Set("endTime", end.UTC().Format(time.RFC3339))
	q.Set("step", step.String())
	return getJSON[usage.Series](ctx, m, "jobs/"+url.PathEscape(id)+"/metrics", q)
}

// describeUsage writes the Usage section: the job's GPU utilization and memory as
// sparklines with their minimum, average and maximum, then the same per rank of a job of
// several pods (usageMaxRanks of them, then how many more).
func describeUsage(w io.Writer, u jobUsage) error {
	if u.note != "" {
		fmt.Fprintln(w, "Usage: "+u.note)
		return nil
	}
	s := u.series
	step := u.step
	if d, err := time.ParseDuration(s.Step); err == nil && d > 0 {
		step = d
	}
	fmt.Fprintf(w, "Usage (GPU, %s to %s, step %s):\n", s.Start.UTC().Format(time.RFC3339), s.End.UTC().Format(time.RFC3339), windowText(step))
	if len(s.GPUUtilization) == 0 && len(s.MemoryUsage) == 0 {
		fmt.Fprintln(w, "  no series of its pods in Prometheus (no dcgm-exporter on their nodes, or one without pod labels)")
		return nil
	}
	lines := func(label string, util, mem []usage.Point) [][]string {
		return [][]string{
			usageLine(label, "util", util, s, step, 100, percentCell),
			usageLine(label, "memory", mem, s, step, 0, func(v float64) string { return fmt.Sprintf("%.1f GiB", v) }),
		}
	}
	rows := lines("job", s.GPUUtilization, s.MemoryUsage)
	if len(s.Pods) > 1 {
		pods := append([]usage.PodSeries(nil), s.Pods...)
		rankOf := func(p usage.PodSeries) int {
			if r, ok := u.ranks[p.Pod]; ok {
				return r
			}
			return 1 << 30
		}
		sort.SliceStable(pods, func(i, j int) bool { return rankOf(pods[i]) < rankOf(pods[j]) })
		for i, p := range pods {
			if i == usageMaxRanks {
				rows = append(rows, []string{fmt.Sprintf("… %d more", len(pods)-usageMaxRanks)})
				break
			}
			label := p.Pod
			if r, ok := u.ranks[p.Pod]; ok {
				label = fmt.Sprintf("%s (rank %d)", p.Pod, r)
			}
			rows = append(rows, lines(label, p.GPUUtilization, p.MemoryUsage)...)
		}
	}
	return (&table{indent: "  "}).write(w, rows...)
}

// usageLine is a row of the Usage section: what, the metric, its sparkline (scaled to top,
// or to its maximum when top is 0) and its minimum, average and maximum.
func usageLine(what, metric string, ps []usage.Point, s usage.Series, step time.Duration, top float64, format func(float64) string) []string {
	if len(ps) == 0 {
		return []string{what, metric, noValue}
	}
	st := usage.StatsOf(ps)
	return []string{what, metric, sparkline(ps, s.Start, s.End, step, sparkWidth, top),
		fmt.Sprintf("min %s  avg %s  max %s", format(st.Min), format(st.Avg), format(st.Max))}
}
