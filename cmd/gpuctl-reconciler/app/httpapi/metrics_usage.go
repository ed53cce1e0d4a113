package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/usage"
)

// GET /api/v1/jobs/{jobId}/metrics: a job's GPU utilization, GPU memory and power over a range,
// read from Prometheus (package usage, dcgm-exporter's series), and the live metrics of GET
// /api/v1/jobs/{jobId}. The job is resolved as the caller sees it first, so another team's job
// answers the 404 of a job that does not exist.

// Limits of the metrics of a job.
const (
	// maxDefaultRange bounds the default range: the job's life, up to its last 24 h.
	maxDefaultRange = 24 * time.Hour
	// liveWindow is the window of JobDetail.Metrics: utilization averaged over it.
	liveWindow = 5 * time.Minute
	// liveTimeout bounds the read of JobDetail.Metrics: GET /api/v1/jobs/{jobId} answers
	// without them rather than wait on a slow Prometheus.
	liveTimeout = 3 * time.Second
)

// The values of ?metric=.
const (
	metricUtil   = "gpuUtilization"
	metricMemory = "memoryUsage"
	metricPower  = "power"
)

// errNoPrometheus is the answer of the metrics without Options.Usage.
var errNoPrometheus = errorf(http.StatusServiceUnavailable,
	"no Prometheus: gpuctl-reconciler runs without --prometheus-url, so it reads no GPU metrics (docs/metrics.md)")

// metricsRange is the parsed query of GET /api/v1/jobs/{jobId}/metrics.
type metricsRange struct {
	start, end time.Time
	step       time.Duration
	metric     string // "" for all
}

// getJobMetrics answers GET /api/v1/jobs/{jobId}/metrics?range&step&startTime&endTime&metric:
// 400 for a bad parameter or too many points, 503 without Prometheus, 502 when it fails.
func (s *server) getJobMetrics(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rd, err := s.model(ctx)
	if err != nil {
		return err
	}
	job, err := rd.Job(ctx, r.PathValue("jobId"))
	if err != nil {
		return err
	}
	mr, err := parseMetricsRange(r.URL.Query(), job, time.Now())
	if err != nil {
		return err
	}
	if s.opts.Usage == nil {
		return errNoPrometheus
	}
	series, err := s.opts.Usage.JobSeries(ctx, jobPodKeys(job, true), mr.start, mr.end, mr.step)
	if err != nil {
		s.log.Warn("job metrics", "job", job.JobID, "err", err)
		return errorf(http.StatusBadGateway, "GPU metrics of %s: %v", job.JobID, err)
	}
	writeJSON(w, http.StatusOK, onlyMetric(series, mr.metric))
	return nil
}

// parseMetricsRange reads the query of the metrics route: endTime (default now), startTime or
// range back from the end (default the job's life, its last 24 h at most), step (default
// usage.DefaultStep of the range) and metric. A bad value is a 400 that names its parameter.
func parseMetricsRange(q url.Values, job cluster.JobDetail, now time.Time) (metricsRange, error) {
	mr := metricsRange{end: now, metric: q.Get("metric")}
	switch mr.metric {
	case "", metricUtil, metricMemory, metricPower:
	default:
		return mr, errorf(http.StatusBadRequest, "metric: want %s, %s or %s, got %q", metricUtil, metricMemory, metricPower, mr.metric)
	}
	timeParam := func(name string, dst *time.Time) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return errorf(http.StatusBadRequest, "%s: want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", name, v)
		}
		*dst = t
		return nil
	}
	durParam := func(name string) (time.Duration, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, errorf(http.StatusBadRequest, "%s: want a positive Go duration such as 90s, 15m or 6h, got %q", name, v)
		}
		return d, nil
	}
	if err := timeParam("endTime", &mr.end); err != nil {
		return mr, err
	}
	if err := timeParam("startTime", &mr.start); err != nil {
		return mr, err
	}
	rng, err := durParam("range")
	if err != nil {
		return mr, err
	}
	if mr.step, err = durParam("step"); err != nil {
		return mr, err
	}
	switch {
	case rng > 0 && !mr.start.IsZero():
		return mr, errorf(http.StatusBadRequest, "range and startTime: give one of them, not both")
	case rng > 0:
		mr.start = mr.end.Add(-rng)
	case mr.start.IsZero():
		mr.start = jobStart(job)
		if mr.end.Sub(mr.start) > maxDefaultRange {
			mr.start = mr.end.Add(-maxDefaultRange)
		}
		if !mr.start.Before(mr.end) { // a job that starts after endTime, or a clock ahead
			mr.start = mr.end.Add(-time.Minute)
		}
	}
	if mr.step == 0 {
		mr.step = usage.DefaultStep(mr.end.Sub(mr.start))
	}
	if err := usage.CheckRange(mr.start, mr.end, mr.step); err != nil {
		return mr, errorf(http.StatusBadRequest, "startTime, endTime, range, step: %v", err)
	}
	return mr, nil
}

// jobStart is when a job started, or was created when it has not.
func jobStart(job cluster.JobDetail) time.Time {
	if job.StartedAt != nil {
		return *job.StartedAt
	}
	return job.CreatedAt
}

// jobPodKeys are namespace/name of a job's pods, and with gone of the pods that it ran and
// that are gone (a training job's attempts), whose series Prometheus still keeps.
func jobPodKeys(job cluster.JobDetail, gone bool) []string {
	names := slices.Clone(job.K8sResources.Pods)
	if gone {
		for _, a := range job.Attempts {
			names = append(names, a.Pod)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	keys := make([]string, 0, len(names))
	for _, n := range names {
		if n != "" {
			keys = append(keys, job.Namespace+"/"+n)
		}
	}
	return keys
}

// onlyMetric empties the series other than metric ("" keeps them all).
func onlyMetric(s usage.Series, metric string) usage.Series {
	if metric == "" {
		return s
	}
	keep := func(name string, ps []usage.Point) []usage.Point {
		if name == metric {
			return ps
		}
		return []usage.Point{}
	}
	s.GPUUtilization, s.MemoryUsage, s.Power = keep(metricUtil, s.GPUUtilization), keep(metricMemory, s.MemoryUsage), keep(metricPower, s.Power)
	for i, p := range s.Pods {
		s.Pods[i].GPUUtilization, s.Pods[i].MemoryUsage, s.Pods[i].Power = keep(metricUtil, p.GPUUtilization),
			keep(metricMemory, p.MemoryUsage), keep(metricPower, p.Power)
	}
	return s
}

// getJob answers GET /api/v1/jobs/{jobId}: with Prometheus, its metrics' GPU utilization
// (averaged over its GPUs and the last liveWindow) and GPU memory ("68Gi/80Gi", of all its
// GPUs), each only when measured; without Prometheus, or one that fails or is slow (logged),
// or without a series, no metrics.
func (s *server) getJob(rd cluster.Model, r *http.Request) (cluster.JobDetail, error) {
	job, err := rd.Job(r.Context(), r.PathValue("jobId"))
	if err != nil || s.opts.Usage == nil {
		return job, err
	}
	pods := jobPodKeys(job, false)
	if len(pods) == 0 {
		return job, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), liveTimeout)
	defer cancel()
	gpus, err := s.opts.Usage.GPUs(ctx, usage.Scope{Pods: pods}, liveWindow)
	if err != nil {
		s.log.Warn("job metrics", "job", job.JobID, "err", err)
		return job, nil
	}
	var util, used, total float64
	n := 0
	for _, g := range gpus {
		if g.HasUtil {
			util += g.Util
			n++
		}
		used += g.MemUsedMiB
		total += g.MemTotalMiB
	}
	var m cluster.JobMetrics
	if n > 0 {
		avg := util / float64(n)
		m.GPUUtilization = &avg
	}
	if total > 0 {
		m.MemoryUsage = fmt.Sprintf("%.0fGi/%.0fGi", used/1024, total/1024)
	}
	if m != (cluster.JobMetrics{}) {
		job.Metrics = &m
	}
	return job, nil
}
