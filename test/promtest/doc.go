// Package promtest runs a real Prometheus for tests: Debian's prometheus 2.42 (with promtool),
// unpacked into ~/.cache/gpuctl by hack/prometheus.sh (see [Binaries]; set
// GPUCTL_PROMETHEUS_BIN to a directory holding prometheus and promtool to skip it), started as
// a child process on a free 127.0.0.1 port with its own data directory, and killed when the
// test binary dies. Several may run side by side.
//
// A test scrapes a dcgm-exporter stand-in (test/dcgmtest) and queries Prometheus' HTTP API:
//
//	e, _ := dcgmtest.Start(dcgmtest.Plain, gpus)
//	p := promtest.StartT(t, promtest.Options{Targets: []string{e.Addr}})
//	// p.URL is http://127.0.0.1:PORT; the first scrape of each target has succeeded
//	e.Set(changed)
//	if err := p.WaitScraped(ctx); err != nil { ... } // Prometheus now has the changed values
//
// [Options].Backfill writes hours of history (dcgmtest.OpenMetrics) into the data directory
// with `promtool tsdb create-blocks-from openmetrics` before Prometheus starts, so that queries
// over the past hours see it at once.
package promtest
