package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the daemon's Prometheus metrics.
type Metrics struct {
	Duration    *prometheus.HistogramVec
	Syncs       *prometheus.CounterVec
	Objects     *prometheus.GaugeVec
	LastSuccess prometheus.Gauge
	Revision    *prometheus.GaugeVec
	Drift       *prometheus.GaugeVec
	// Held is 1 for each tenant namespace held at its last good revision (Status.Held).
	Held *prometheus.GaugeVec
	// TeamGPUs are the GPUs of each team (namespace) and pool: requested by its running pods,
	// and of those GPUs the busy and the idle ones (idle.go), set each round of the idle policy.
	TeamGPUs *prometheus.GaugeVec
	// Info is gpuctl_reconciler_info{cluster}, 1 for the cluster that the daemon syncs (its
	// --cluster; "" without one), so that a query or a dashboard of several clusters' daemons
	// tells them apart by joining on it.
	Info *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gpuctl_reconcile_duration_seconds", Help: "Duration of syncs (fetch, render, plan, apply), by result.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"result"}),
		Syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuctl_reconcile_total", Help: "Syncs attempted, by result."}, []string{"result"}),
		Objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuctl_objects", Help: "Objects of the last sync, by action (create, update, unchanged, ...)."}, []string{"action"}),
		LastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuctl_last_success_timestamp_seconds", Help: "Unix time of the last successful sync."}),
		Revision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuctl_source_revision_info", Help: "The source and revision last applied (value 1)."}, []string{"source", "revision"}),
		Drift: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuctl_drift_objects", Help: "Objects that differ from Git, by kind and category."}, []string{"kind", "category"}),
		Held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuctl_held_namespace", Help: "Tenant namespaces held at their last good revision because their files have errors (value 1)."}, []string{"namespace"}),
		TeamGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuctl_team_gpus", Help: "GPUs of each team (namespace) and pool: requested by its running pods, and of those the busy and the idle ones " +
				"(utilization from dcgm-exporter's series in Prometheus, below the idle policy's threshold; GPUs without series are neither)."},
			[]string{"team", "pool", "state"}),
		Info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuctl_reconciler_info", Help: "The cluster that this gpuctl-reconciler syncs (its --cluster; empty without one), value 1."}, []string{"cluster"}),
	}
	reg.MustRegister(m.Duration, m.Syncs, m.Objects, m.LastSuccess, m.Revision, m.Drift, m.Held, m.TeamGPUs, m.Info)
	return m
}

// setInfo sets gpuctl_reconciler_info to the one series of cluster.
func (m *Metrics) setInfo(cluster string) {
	if m == nil {
		return
	}
	m.Info.Reset()
	m.Info.WithLabelValues(cluster).Set(1)
}

func (m *Metrics) observe(st Status) {
	if m == nil {
		return
	}
	m.Duration.WithLabelValues(string(st.Result)).Observe(st.Duration.Seconds())
	m.Syncs.WithLabelValues(string(st.Result)).Inc()
	if st.Counts != nil {
		m.Objects.Reset()
		for a, n := range st.Counts {
			m.Objects.WithLabelValues(a).Set(float64(n))
		}
	}
	m.Held.Reset()
	for _, h := range st.Held {
		m.Held.WithLabelValues(h.Namespace).Set(1)
	}
	if st.Result == ResultSucceeded {
		m.LastSuccess.Set(float64(st.LastSuccess.UnixNano()) / 1e9)
		m.Revision.Reset()
		m.Revision.WithLabelValues(st.Source, st.AppliedRevision).Set(1)
	}
}

// setTeamGPUs sets gpuctl_team_gpus to the rows of a round: only theirs.
func (m *Metrics) setTeamGPUs(rows []teamGPU) {
	if m == nil {
		return
	}
	m.TeamGPUs.Reset()
	for _, r := range rows {
		m.TeamGPUs.WithLabelValues(r.team, r.pool, "requested").Set(r.requested)
		m.TeamGPUs.WithLabelValues(r.team, r.pool, "busy").Set(r.busy)
		m.TeamGPUs.WithLabelValues(r.team, r.pool, "idle").Set(r.idleGPU)
	}
}
