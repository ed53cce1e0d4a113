package monitoring

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// prometheusOwn are the series Prometheus writes itself for each target.
var prometheusOwn = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// registered returns the metric names that gpuctl-reconciler serves at /metrics, built as
// cmd/gpuctl-reconciler/app builds its registry (Go and process collectors, daemon.NewMetrics,
// which holds the drift detector's gauge too, and the API's request metrics that httpapi.New
// registers), with the series names of its histograms and summaries (_bucket, _sum, _count),
// and Prometheus' own per-target series.
func registered(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := daemon.NewMetrics(reg)
	h := httpapi.New(httpapi.Options{Registry: reg})
	// A vector has no series until a label set is used: one of each histogram, so that
	// Gather tells its type.
	m.Duration.WithLabelValues(string(daemon.ResultSucceeded)).Observe(1)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))

	known := map[string]bool{}
	for _, name := range prometheusOwn {
		known[name] = true
	}
	// Every collector's descriptions, used or not: Gather leaves out a vector without series.
	descs := make(chan *prometheus.Desc)
	go func() { reg.Describe(descs); close(descs) }()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if sm := fqName.FindStringSubmatch(d.String()); sm != nil {
			known[sm[1]] = true
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		known[f.GetName()] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				known[f.GetName()+s] = true
			}
		case dto.MetricType_SUMMARY:
			for _, s := range []string{"_sum", "_count"} {
				known[f.GetName()+s] = true
			}
		}
	}
	for _, want := range []string{"gpuctl_reconcile_total", "gpuctl_drift_objects", "gpuctl_api_requests_total",
		"gpuctl_reconcile_duration_seconds_bucket", "gpuctl_api_request_duration_seconds_bucket"} {
		if !known[want] {
			t.Fatalf("the registry has no %s: %v", want, known)
		}
	}
	return known
}

var (
	// quoted are PromQL's string literals.
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	// matchers are label matchers and range or subquery durations: {...} and [...].
	matchers = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	// grouping are the label lists of by, without, on, ignoring, group_left and group_right.
	grouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	// word is an identifier or a number.
	word = regexp.MustCompile(`[A-Za-z0-9_:.$]+`)
	// keywords are PromQL's words that name no metric.
	keywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames returns the metric names that a PromQL expression (or a Grafana query with
// $variables) reads: its identifiers, less functions and aggregations (a name followed by a
// parenthesis), keywords, label names and values, durations and numbers.
func metricNames(expr string) []string {
	expr = quoted.ReplaceAllString(expr, `""`)
	expr = matchers.ReplaceAllString(expr, " ")
	expr = grouping.ReplaceAllString(expr, " ")
	var names []string
	for _, loc := range word.FindAllStringIndex(expr, -1) {
		w := expr[loc[0]:loc[1]]
		if c := w[0]; c >= '0' && c <= '9' || c == '.' || c == '$' || slices.Contains(keywords, strings.ToLower(w)) {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(expr[loc[1]:], " \t\n"), "(") {
			continue // a function or an aggregation
		}
		names = append(names, w)
	}
	return names
}

// unknownMetrics returns the metric names of expr that known lacks.
func unknownMetrics(expr string, known map[string]bool) []string {
	var unknown []string
	for _, n := range metricNames(expr) {
		if !known[n] {
			unknown = append(unknown, n)
		}
	}
	return unknown
}

// TestMetricNames: the parser of metric names finds each, and only, the metrics of an
// expression.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`time() - max by (namespace, job) (gpuctl_last_success_timestamp_seconds) > 900`:            {"gpuctl_last_success_timestamp_seconds"},
		`up{job="gpuctl-reconciler"} == 0 or absent(up{job="gpuctl-reconciler"})`:                   {"up", "up"},
		`1 - sum by (job) (rate(a_bucket{le="60"}[30m])) / sum by (job) (rate(a_count[30m])) > 0.1`: {"a_bucket", "a_count"},
		`sum by (team) (x{team=~"$team", pool=~"$pool"}) > 1e3`:                                     {"x"},
		`histogram_quantile(0.9, sum by (le) (rate(h_bucket[$__rate_interval])))`:                   {"h_bucket"},
		`a / on (job) group_left (team) b offset 5m and bool c`:                                     {"a", "b", "c"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}
