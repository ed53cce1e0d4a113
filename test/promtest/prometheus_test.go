package promtest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpuctl/gpuctl/test/dcgmtest"
)

// twoGPUs are two GPUs of one node, each held by a pod.
func twoGPUs(util0, util1 float64) []dcgmtest.GPU {
	return []dcgmtest.GPU{
		{Node: "node-a", Index: 0, UUID: dcgmtest.UUID("node-a", 0), Model: dcgmtest.DefaultModel, Namespace: "team-a", Pod: "train-0", Container: "main", Util: util0, MemUsedMiB: 1024, MemTotalMiB: dcgmtest.DefaultMemTotalMiB},
		{Node: "node-a", Index: 1, UUID: dcgmtest.UUID("node-a", 1), Model: dcgmtest.DefaultModel, Namespace: "team-b", Pod: "nb-0", Container: "main", Util: util1, MemUsedMiB: 2048, MemTotalMiB: dcgmtest.DefaultMemTotalMiB},
	}
}

// utilByPod queries q at t and returns its values by the pod label.
func utilByPod(t *testing.T, p *Prometheus, q string, at time.Time) map[string]float64 {
	t.Helper()
	val, warnings, _, err := p.API.Query(context.Background(), q, at)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("query %s: %v %v", q, err, warnings)
	}
	out := map[string]float64{}
	for _, s := range val.(model.Vector) {
		out[string(s.Metric["pod"])] = float64(s.Value)
	}
	return out
}

// TestScrapeExporter: a real Prometheus scraping the dcgm-exporter stand-in has the served GPU
// utilization with its labels once Start returns, and the new values after Set and
// WaitScraped.
func TestScrapeExporter(t *testing.T) {
	e, err := dcgmtest.Start(dcgmtest.Plain, twoGPUs(37, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	start := time.Now()
	p := StartT(t, Options{Targets: []string{e.Addr}})
	t.Logf("Prometheus started and scraped once in %v", time.Since(start).Round(time.Millisecond))

	got := utilByPod(t, p, `DCGM_FI_DEV_GPU_UTIL{Hostname="node-a",modelName="NVIDIA H100 80GB HBM3",namespace=~"team-.*"}`, time.Now())
	if fmt.Sprint(got) != fmt.Sprint(map[string]float64{"nb-0": 0, "train-0": 37}) {
		t.Errorf("DCGM_FI_DEV_GPU_UTIL by pod = %v, want train-0 37, nb-0 0", got)
	}

	e.Set(twoGPUs(91, 12))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waited := time.Now()
	if err := p.WaitScraped(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("WaitScraped took %v", time.Since(waited).Round(time.Millisecond))
	got = utilByPod(t, p, `DCGM_FI_DEV_GPU_UTIL`, time.Now())
	if fmt.Sprint(got) != fmt.Sprint(map[string]float64{"nb-0": 12, "train-0": 91}) {
		t.Errorf("after Set: DCGM_FI_DEV_GPU_UTIL by pod = %v, want train-0 91, nb-0 12", got)
	}
	if got := utilByPod(t, p, `DCGM_FI_PROF_GR_ENGINE_ACTIVE`, time.Now()); math.Abs(got["train-0"]-0.91) > 1e-9 {
		t.Errorf("after Set: DCGM_FI_PROF_GR_ENGINE_ACTIVE of train-0 = %v, want 0.91", got["train-0"])
	}
}

// TestBackfill: 3 h of history at a 60 s step, backfilled with promtool before start, is
// queryable right after Start: max_over_time over 3 h is the backfilled 0 % and
// count_over_time counts its samples, also for a GPU with an hourly burst.
func TestBackfill(t *testing.T) {
	now := time.Now().Truncate(time.Minute)
	from := now.Add(-3 * time.Hour)
	burst := func(g dcgmtest.GPU, at time.Time) dcgmtest.GPU {
		if g.Pod == "nb-0" && at.Sub(from)%time.Hour < 5*time.Minute {
			g.Util = 100
		}
		return g
	}
	history := dcgmtest.OpenMetrics(dcgmtest.Plain, twoGPUs(0, 0), from, now, time.Minute, burst)
	start := time.Now()
	p := StartT(t, Options{Backfill: history})
	t.Logf("promtool backfill of %d KiB and Prometheus start took %v", len(history)/1024, time.Since(start).Round(time.Millisecond))

	maxUtil := utilByPod(t, p, `max_over_time(DCGM_FI_DEV_GPU_UTIL[3h])`, now)
	if fmt.Sprint(maxUtil) != fmt.Sprint(map[string]float64{"nb-0": 100, "train-0": 0}) {
		t.Errorf("max_over_time(GPU_UTIL[3h]) = %v, want train-0 0 (idle), nb-0 100 (bursts)", maxUtil)
	}
	count := utilByPod(t, p, `count_over_time(DCGM_FI_DEV_GPU_UTIL[3h])`, now)
	// The range (now-3h, now] holds one sample a minute: 180 (the one at now-3h is outside).
	if count["train-0"] < 179 || count["train-0"] > 181 {
		t.Errorf("count_over_time(GPU_UTIL[3h]) of train-0 = %v, want about 180", count["train-0"])
	}
	busy := utilByPod(t, p, `sum_over_time((DCGM_FI_DEV_GPU_UTIL > bool 50)[3h:1m])`, now)
	if busy["nb-0"] < 14 || busy["nb-0"] > 16 {
		t.Errorf("busy minutes of nb-0 over 3h = %v, want 15 (three 5-minute bursts)", busy["nb-0"])
	}
}

// TestSideBySide: two Prometheus servers run at once, each with its own port and data.
func TestSideBySide(t *testing.T) {
	e1, err := dcgmtest.Start(dcgmtest.Plain, twoGPUs(10, 20))
	if err != nil {
		t.Fatal(err)
	}
	defer e1.Close()
	e2, err := dcgmtest.Start(dcgmtest.Lowercase, twoGPUs(30, 40))
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	// Started at once, as parallel tests do; each waits out the 5 s discovery tick (see Start).
	var ps [2]*Prometheus
	var errs [2]error
	var wg sync.WaitGroup
	for i, e := range []*dcgmtest.Exporter{e1, e2} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ps[i], errs[i] = Start(ctx, Options{Targets: []string{e.Addr}})
		})
	}
	wg.Wait()
	for i, p := range ps {
		if p != nil {
			t.Cleanup(func() { p.Stop() })
		}
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	p1, p2 := ps[0], ps[1]
	if p1.URL == p2.URL || p1.Dir == p2.Dir {
		t.Fatalf("same URL or dir: %s %s, %s %s", p1.URL, p2.URL, p1.Dir, p2.Dir)
	}
	if got := utilByPod(t, p1, `DCGM_FI_DEV_GPU_UTIL{Hostname="node-a"}`, time.Now()); got["train-0"] != 10 {
		t.Errorf("first Prometheus: %v", got)
	}
	if got := utilByPod(t, p2, `DCGM_FI_DEV_GPU_UTIL{hostname="node-a"}`, time.Now()); got["train-0"] != 30 {
		t.Errorf("second Prometheus: %v", got)
	}
}
