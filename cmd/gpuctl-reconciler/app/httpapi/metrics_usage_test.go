package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/usage"
)

// sftStub is a Prometheus whose series are those of alice.sft's pod sft-abcde: its GPUs' util
// 0, 50 and 100 %, 10, 40 and 68 GiB of 80 GiB, and 100, 300 and 600 W.
func sftStub(t *testing.T) *promStub {
	t.Helper()
	p := newPromStub(t)
	p.util["sft-abcde"] = []float64{0, 50, 100}
	p.memMiB["sft-abcde"] = []float64{10 * 1024, 40 * 1024, 68 * 1024}
	p.power["sft-abcde"] = []float64{100, 300, 600}
	p.memTotalMiB = 80 * 1024
	return p
}

// jobMetrics is the "metrics" of GET /api/v1/jobs/{jobId} as sent (compact JSON), and whether
// the key is there.
func jobMetrics(t *testing.T, h http.Handler, id string) (string, bool) {
	t.Helper()
	var job map[string]json.RawMessage
	get(t, h, "/api/v1/jobs/"+id, http.StatusOK, &job)
	m, ok := job["metrics"]
	if !ok {
		return "", false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.String(), true
}

func TestJobMetrics(t *testing.T) {
	p := sftStub(t)
	p.util["llm-1"] = []float64{99} // bob's: not alice.sft's
	h := usageServer(t, p.client(t))

	var s usage.Series
	get(t, h, "/api/v1/jobs/alice.sft/metrics?range=1h&step=1m", http.StatusOK, &s)
	values := func(ps []usage.Point) []float64 {
		var vs []float64
		for _, p := range ps {
			vs = append(vs, p.Value)
		}
		return vs
	}
	if got := values(s.GPUUtilization); len(got) != 3 || got[0] != 0 || got[1] != 50 || got[2] != 100 {
		t.Errorf("gpuUtilization %v, want the served 0 50 100", got)
	}
	if got := values(s.MemoryUsage); len(got) != 3 || got[2] != 68 {
		t.Errorf("memoryUsage %v GiB, want 10 40 68", got)
	}
	if got := values(s.Power); len(got) != 3 || got[2] != 600 {
		t.Errorf("power %v, want 100 300 600", got)
	}
	if len(s.Pods) != 1 || s.Pods[0].Pod != "sft-abcde" || s.Step != "1m0s" || s.End.Sub(s.Start) != time.Hour {
		t.Errorf("pods %+v, step %s, range %s", s.Pods, s.Step, s.End.Sub(s.Start))
	}
	if !s.GPUUtilization[1].Timestamp.Equal(s.Start.Add(time.Minute).Truncate(time.Millisecond)) {
		t.Errorf("second point at %s, want a step after %s", s.GPUUtilization[1].Timestamp, s.Start)
	}

	// ?metric= fills that key only.
	get(t, h, "/api/v1/jobs/alice.sft/metrics?metric=power&startTime=2026-01-01T00:00:00Z&endTime=2026-01-01T01:00:00Z", http.StatusOK, &s)
	if len(s.Power) != 3 || len(s.GPUUtilization) != 0 || len(s.MemoryUsage) != 0 || len(s.Pods[0].GPUUtilization) != 0 ||
		len(s.Pods[0].Power) != 3 || !s.Start.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || s.Step != "30s" {
		t.Errorf("metric=power: %+v", s)
	}

	// By default the job's life, up to its last 24 h: the fixture's job started in 2024.
	get(t, h, "/api/v1/jobs/alice.sft/metrics", http.StatusOK, &s)
	if d := s.End.Sub(s.Start); d != 24*time.Hour || s.Step != usage.DefaultStep(24*time.Hour).String() {
		t.Errorf("default range %s step %s, want 24h at %s", d, s.Step, usage.DefaultStep(24*time.Hour))
	}

	// GET /api/v1/jobs/{jobId} has the last 5 minutes: what is measured, nothing invented
	// (the seed's networkLatency and throughput are measured by nothing).
	if m, _ := jobMetrics(t, h, "alice.sft"); m != `{"gpuUtilization":100,"memoryUsage":"68Gi/80Gi"}` {
		t.Errorf("job metrics %s, want 100 %% and 68Gi/80Gi only", m)
	}
	// A job whose GPUs are measured idle has 0 %: a value, kept.
	p.util["sft-abcde"] = []float64{0}
	if m, _ := jobMetrics(t, h, "alice.sft"); m != `{"gpuUtilization":0,"memoryUsage":"68Gi/80Gi"}` {
		t.Errorf("an idle job's metrics %s, want 0 %% and 68Gi/80Gi", m)
	}
	// A job without series in Prometheus has no metrics.
	delete(p.util, "sft-abcde")
	delete(p.memMiB, "sft-abcde")
	if m, ok := jobMetrics(t, h, "alice.sft"); ok {
		t.Errorf("metrics of a job without series: %s", m)
	}
}

func TestJobMetricsOfAnotherTeam(t *testing.T) {
	p := sftStub(t)
	p.util["llm-1"] = []float64{99}
	h := usageServer(t, p.client(t))
	missing := do(t, h, http.MethodGet, "/api/v1/jobs/bob.nope/metrics", teamToken)
	other := do(t, h, http.MethodGet, "/api/v1/jobs/bob.llm/metrics?range=1h", teamToken)
	wantError(t, other, http.StatusNotFound)
	if a, b := strings.ReplaceAll(other.Body.String(), "bob.llm", "X"), strings.ReplaceAll(missing.Body.String(), "bob.nope", "X"); a != b {
		t.Errorf("another team's job answers %s, a missing job %s", a, b)
	}
	if n := p.count(); n != 0 {
		t.Errorf("%d queries sent to Prometheus for a job the token does not see", n)
	}
	// Its own job, as the team sees it.
	if w := do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/metrics?range=1h", teamToken); w.Code != http.StatusOK {
		t.Errorf("alice.sft with alice's token: %d %s", w.Code, w.Body)
	}
}

func TestJobMetricsParams(t *testing.T) {
	h := usageServer(t, sftStub(t).client(t))
	for query, param := range map[string]string{
		"range=x":            "range",
		"range=-1h":          "range",
		"step=0":             "step",
		"step=fast":          "step",
		"startTime=monday":   "startTime",
		"endTime=2026-01-01": "endTime",
		"metric=cpu":         "metric",
		"range=1h&startTime=2026-01-01T00:00:00Z":                     "startTime",
		"range=24h&step=1s":                                           "step",
		"startTime=2026-01-02T00:00:00Z&endTime=2026-01-01T00:00:00Z": "startTime",
	} {
		e := wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/metrics?"+query, adminToken), http.StatusBadRequest)
		if !strings.Contains(e.Message, param) {
			t.Errorf("?%s: %q does not name %s", query, e.Message, param)
		}
	}
}

func TestJobMetricsWithoutPrometheus(t *testing.T) {
	h, _ := testServer(t)
	e := wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/metrics", adminToken), http.StatusServiceUnavailable)
	if !strings.Contains(e.Message, "no Prometheus") || !strings.Contains(e.Message, "--prometheus-url") {
		t.Errorf("503 says %q", e.Message)
	}
	wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/alice.nope/metrics", adminToken), http.StatusNotFound)
	if m, ok := jobMetrics(t, h, "alice.sft"); ok {
		t.Errorf("metrics without Prometheus: %s, want none", m)
	}
	if body := jobPage(t, h, "/jobs/alice.sft", http.StatusOK); !strings.Contains(body, uiUsageOff) || strings.Contains(body, "<svg id=\"usage-util\"") {
		t.Errorf("the job page without Prometheus does not say %q in place of charts", uiUsageOff)
	}
	if body := okPage(t, h); !strings.Contains(body, uiUsageOff) || strings.Contains(body, "<svg id=\"pool-usage-0\"") {
		t.Errorf("the page without Prometheus does not say %q in place of charts", uiUsageOff)
	}
}

func TestJobMetricsPrometheusDown(t *testing.T) {
	p := sftStub(t)
	url := p.srv.URL
	p.srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("prom-bearer-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := usage.New(usage.Options{URL: strings.Replace(url, "http://", "http://ops:prom-password@", 1), BearerTokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	h := usageServer(t, c)
	e := wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/metrics", adminToken), http.StatusBadGateway)
	if !strings.Contains(strings.ToLower(e.Message), "prometheus") || strings.Contains(e.Message, "secret") || strings.Contains(e.Message, "prom-password") {
		t.Errorf("502 says %q: want Prometheus named, no token or password", e.Message)
	}
	if m, ok := jobMetrics(t, h, "alice.sft"); ok {
		t.Errorf("metrics with Prometheus down: %s, want none", m)
	}
	if body := jobPage(t, h, "/jobs/alice.sft", http.StatusOK); !strings.Contains(body, "GPU usage unavailable:") || strings.Contains(body, "secret") {
		t.Error("the job page does not say that the usage is unavailable, or says a secret")
	}
}
