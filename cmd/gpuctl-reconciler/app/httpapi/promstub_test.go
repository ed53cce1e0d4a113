package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/usage"
	"k8s.io/apimachinery/pkg/runtime"
)

// promStub answers Prometheus' /api/v1/query and /api/v1/query_range as Prometheus does, with
// the series of the queries that package usage sends: per pod (in namespace alice) its GPU
// utilization (%), GPU memory used (MiB) and power (W), one value per step from the range's
// start; per node the utilization of its GPUs for the pool query. It answers only the pods and
// nodes whose names the query selects, and counts the queries.
type promStub struct {
	srv *httptest.Server

	mu      sync.Mutex
	queries []string

	util, memMiB, power map[string][]float64 // pod → one value per step
	memTotalMiB         float64              // of each pod's GPUs, for the instant queries
	nodeUtil            map[string][]float64 // node → one value per GPU, every step
}

func newPromStub(t *testing.T) *promStub {
	t.Helper()
	p := &promStub{util: map[string][]float64{}, memMiB: map[string][]float64{}, power: map[string][]float64{},
		nodeUtil: map[string][]float64{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// client is a usage client of the stub.
func (p *promStub) client(t *testing.T) *usage.Client {
	t.Helper()
	c, err := usage.New(usage.Options{URL: p.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rangeQueries are the range queries received that contain sub.
func (p *promStub) rangeQueries(sub string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, q := range p.queries {
		if strings.HasPrefix(q, "range ") && strings.Contains(q, sub) {
			n++
		}
	}
	return n
}

func (p *promStub) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queries)
}

type stubSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values,omitempty"`
	Value  *[2]any           `json:"value,omitempty"`
}

// selects reports whether the query's regexp alternation names name.
func selects(q, name string) bool {
	quoted := strconv.Quote(regexp.QuoteMeta(name))
	n := quoted[1 : len(quoted)-1]
	return strings.Contains(q, `"`+n+`"`) || strings.Contains(q, `"`+n+`|`) || strings.Contains(q, `|`+n+`"`) || strings.Contains(q, `|`+n+`|`)
}

func (p *promStub) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	num := func(name string) float64 { f, _ := strconv.ParseFloat(r.Form.Get(name), 64); return f }
	sample := func(ts, v float64) [2]any { return [2]any{ts, strconv.FormatFloat(v, 'f', -1, 64)} }
	var out []stubSeries
	switch r.URL.Path {
	case "/api/v1/query_range":
		p.record("range " + q)
		start, end, step := num("start"), num("end"), num("step")
		steps := func(vals []float64, scale float64) [][2]any {
			var vs [][2]any
			for i, v := range vals {
				if ts := start + float64(i)*step; ts <= end {
					vs = append(vs, sample(ts, v*scale))
				}
			}
			return vs
		}
		if strings.Contains(q, "gpuctl_agg") {
			for node, gpus := range p.nodeUtil {
				if !selects(q, node) {
					continue
				}
				sum := 0.0
				for _, v := range gpus {
					sum += v
				}
				n := int((end - start) / step)
				for agg, v := range map[string]float64{"sum": sum, "count": float64(len(gpus))} {
					vals := make([]float64, n+1)
					for i := range vals {
						vals[i] = v
					}
					out = append(out, stubSeries{Metric: map[string]string{"Hostname": node, "gpuctl_agg": agg}, Values: steps(vals, 1)})
				}
			}
			break
		}
		var src map[string][]float64
		scale := 1.0
		switch {
		case strings.HasPrefix(q, "count by"):
			src, scale = p.util, 0 // 1 below
		case strings.Contains(q, usage.MetricGPUUtil):
			src = p.util
		case strings.Contains(q, usage.MetricFBUsed):
			src = p.memMiB
		case strings.Contains(q, usage.MetricPower):
			src = p.power
		}
		for pod, vals := range src {
			if !selects(q, pod) {
				continue
			}
			vs := steps(vals, scale)
			if scale == 0 {
				for i := range vs {
					vs[i][1] = "1"
				}
			}
			out = append(out, stubSeries{Metric: map[string]string{"namespace": "alice", "pod": pod}, Values: vs})
		}
	case "/api/v1/query":
		p.record("instant " + q)
		ts := float64(time.Now().Unix())
		for pod, vals := range p.util {
			if !selects(q, pod) || len(vals) == 0 {
				continue
			}
			var v float64
			switch {
			case strings.Contains(q, usage.MetricGPUUtil):
				v = vals[len(vals)-1]
			case strings.Contains(q, usage.MetricFBUsed):
				v = p.memMiB[pod][len(p.memMiB[pod])-1]
			case strings.Contains(q, usage.MetricFBFree):
				v = p.memTotalMiB - p.memMiB[pod][len(p.memMiB[pod])-1]
			case strings.Contains(q, usage.MetricPower):
				v = p.power[pod][len(p.power[pod])-1]
			}
			s := sample(ts, v)
			out = append(out, stubSeries{Metric: map[string]string{"namespace": "alice", "pod": pod, "Hostname": "gpu-1", "gpu": "0", "UUID": "GPU-" + pod}, Value: &s})
		}
	default:
		http.NotFound(w, r)
		return
	}
	kind := "matrix"
	if r.URL.Path == "/api/v1/query" {
		kind = "vector"
	}
	if out == nil {
		out = []stubSeries{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": kind, "result": out}})
}

func (p *promStub) record(q string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queries = append(p.queries, q)
}

// usageServer is the handler over the fixture cluster (or objs) with this usage client, and
// no rate limit (a test sends a flood of page reads).
func usageServer(t *testing.T, c *usage.Client, objs ...runtime.Object) http.Handler {
	t.Helper()
	h, _ := testServerWith(t, func(o *Options) { o.Usage, o.RateLimit = c, -1 }, objs...)
	return h
}
