package httpapi

import (
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/test/dcgmtest"
	"github.com/gpuctl/gpuctl/test/promtest"
	"github.com/gpuctl/gpuctl/usage"
)

// The metrics route, the job's live metrics and the pools' charts against a real Prometheus
// (Debian's 2.42, test/promtest) scraping dcgm-exporter stand-ins (test/dcgmtest) in the
// plain, lowercase and exported label forms.
func TestJobMetricsAgainstPrometheus(t *testing.T) {
	gpu := func(node string, i int, ns, pod string, util, mem float64) dcgmtest.GPU {
		return dcgmtest.GPU{Node: node, Index: i, UUID: dcgmtest.UUID(node, i), Model: dcgmtest.DefaultModel, Namespace: ns, Pod: pod,
			Container: "main", Util: util, MemUsedMiB: mem, MemTotalMiB: dcgmtest.DefaultMemTotalMiB, PowerW: 100 + util}
	}
	var targets []string
	for style, gpus := range map[dcgmtest.LabelStyle][]dcgmtest.GPU{
		// alice.sft's pod on gpu-1 (training-pool), 2 GPUs
		dcgmtest.Plain: {gpu("gpu-1", 0, "alice", "sft-abcde", 90, 60000), gpu("gpu-1", 1, "alice", "sft-abcde", 70, 40000)},
		// a GPU of gpu-2 (training-pool) that no pod holds
		dcgmtest.Lowercase: {gpu("gpu-2", 0, "", "", 30, 0)},
		// bob.llm's pod on gpu-3 (no pool: default)
		dcgmtest.Exported: {gpu("gpu-3", 0, "bob", "llm-1", 42, 20000)},
	} {
		e, err := dcgmtest.Start(style, gpus)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		targets = append(targets, e.Addr)
	}
	p := promtest.StartT(t, promtest.Options{Targets: targets})
	c, err := usage.New(usage.Options{URL: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := usageServer(t, c)
	near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

	var s usage.Series
	get(t, h, "/api/v1/jobs/alice.sft/metrics?range=2m&step=15s", http.StatusOK, &s)
	if len(s.GPUUtilization) == 0 || len(s.MemoryUsage) == 0 || len(s.Power) == 0 || len(s.Pods) != 1 || s.Pods[0].Pod != "sft-abcde" {
		t.Fatalf("series %+v", s)
	}
	last := func(ps []usage.Point) float64 { return ps[len(ps)-1].Value }
	if u, m, w := last(s.GPUUtilization), last(s.MemoryUsage), last(s.Power); !near(u, 80, 1) || !near(m, 100000.0/1024, 0.1) || !near(w, 360, 1) {
		t.Errorf("last util %.1f %%, memory %.2f GiB, power %.0f W; served 80 %% (90 and 70), 97.66 GiB, 360 W", u, m, w)
	}

	var job cluster.JobDetail
	get(t, h, "/api/v1/jobs/alice.sft", http.StatusOK, &job)
	if m := job.Metrics; m == nil || m.GPUUtilization == nil || !near(*m.GPUUtilization, 80, 1) || m.MemoryUsage != "98Gi/159Gi" {
		t.Errorf("job metrics %+v, want 80 %% and 98Gi/159Gi", job.Metrics)
	}
	// bob's job is not alice's to read.
	wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/bob.llm/metrics", teamToken), http.StatusNotFound)

	// The pools: training-pool's three GPUs average 63.3 %, default's one 42 %.
	body := okPage(t, h)
	for id, want := range map[string]string{"pool-usage-0": "now 42%", "pool-usage-1": "now 63.3%"} {
		if svg := svgOf(t, body, id); !strings.Contains(svg, want) || len(polylines(t, svg)[0]) == 0 {
			t.Errorf("%s lacks %q or points:\n%s", id, want, svg)
		}
	}
}
