package usage_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/dcgmtest"
	"github.com/gpuctl/gpuctl/test/promtest"
	"github.com/gpuctl/gpuctl/usage"
)

// The queries of package usage against a real Prometheus (Debian's 2.42) scraping three
// dcgm-exporter stand-ins, one per label form, with 3 h of backfilled history.
func TestAgainstPrometheus(t *testing.T) {
	ctx := t.Context()
	h100 := func(node string, i int, ns, pod string, util, mem float64) dcgmtest.GPU {
		return dcgmtest.GPU{Node: node, Index: i, UUID: dcgmtest.UUID(node, i), Model: dcgmtest.DefaultModel, Namespace: ns, Pod: pod,
			Container: "main", Util: util, MemUsedMiB: mem, MemTotalMiB: dcgmtest.DefaultMemTotalMiB, PowerW: 100 + util}
	}
	plain := []dcgmtest.GPU{
		h100("gpu-0", 0, "alice", "sft-0", 91, 70000), h100("gpu-0", 1, "alice", "sft-0", 87, 69000),
		h100("gpu-0", 2, "alice", "idle-0", 0, 30000), h100("gpu-0", 3, "alice", "burst-0", 0, 1000),
		h100("gpu-0", 4, "", "", 0, 0), // no pod holds it
	}
	exported := []dcgmtest.GPU{h100("gpu-1", 0, "bob", "serve-0", 42, 50000)}
	mig := h100("gpu-2", 0, "carol", "nb-0", 33, 9000)
	mig.MIG, mig.MIGInstance, mig.MemTotalMiB = true, 1, 9856
	lower := []dcgmtest.GPU{mig}

	// 3 h of history of alice's idle and burst pods: idle at 0 %; a 5-minute burst each hour.
	// The history ends now, not at the last whole minute: Prometheus takes some seconds to
	// start, and a history that ended more than a step before the audit's query left a step
	// with no sample between it and the live series (an idle run cut to 1m).
	end := time.Now().Truncate(time.Second)
	start := end.Add(-3 * time.Hour)
	history := dcgmtest.OpenMetrics(dcgmtest.Plain, plain[2:4], start, end, time.Minute, func(g dcgmtest.GPU, at time.Time) dcgmtest.GPU {
		if g.Pod == "burst-0" && at.Sub(start)%time.Hour < 5*time.Minute {
			g.Util = 95
		}
		return g
	})
	var targets []string
	exporters := map[dcgmtest.LabelStyle]*dcgmtest.Exporter{}
	for style, gpus := range map[dcgmtest.LabelStyle][]dcgmtest.GPU{dcgmtest.Plain: plain, dcgmtest.Exported: exported, dcgmtest.Lowercase: lower} {
		e, err := dcgmtest.Start(style, gpus)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		targets = append(targets, e.Addr)
		exporters[style] = e
	}
	// A team's pod that serves DCGM series of its own, scraped by the cluster's scrape of
	// the pods' /metrics: it claims bob's pod in the exported_ form.
	forged := h100("gpu-9", 0, "bob", "serve-0", 0, 79000)
	forger, err := dcgmtest.Start(dcgmtest.Exported, []dcgmtest.GPU{forged})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(forger.Close)
	p := promtest.StartT(t, promtest.Options{Targets: targets, Backfill: history, OtherJobs: map[string][]string{"kubernetes-pods": {forger.Addr}}})
	c, err := usage.New(usage.Options{URL: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	// The administrator's selector reads the exporter's scrape alone.
	onlyExporter, err := usage.New(usage.Options{URL: p.URL, Selector: `job="` + promtest.Job + `"`})
	if err != nil {
		t.Fatal(err)
	}
	waitUp(t, p, "kubernetes-pods")

	t.Run("GPUs", func(t *testing.T) {
		gpus, err := c.GPUs(ctx, usage.Scope{}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		byUUID := map[string]usage.GPU{}
		for _, g := range gpus {
			byUUID[g.UUID] = g
		}
		for _, want := range append(append(append([]dcgmtest.GPU{}, plain...), exported...), lower...) {
			got, ok := byUUID[want.UUID]
			if !ok {
				t.Errorf("GPU %s of %s/%s: missing", want.UUID, want.Namespace, want.Pod)
				continue
			}
			if got.Namespace != want.Namespace || got.Pod != want.Pod || got.Node != want.Node {
				t.Errorf("GPU %s: %s/%s on %s, want %s/%s on %s", want.UUID, got.Namespace, got.Pod, got.Node, want.Namespace, want.Pod, want.Node)
			}
			if want.Pod == "burst-0" {
				continue // its minute of history may hold a burst
			}
			if want.MIG {
				want.PowerW = 0 // a MIG instance has no power series of its own
			}
			if !got.HasUtil || math.Abs(got.Util-want.Util) > 1 || math.Abs(got.MemUsedMiB-want.MemUsedMiB) > 1 ||
				math.Abs(got.MemTotalMiB-want.MemTotalMiB) > 1 || math.Abs(got.PowerW-want.PowerW) > 1 {
				t.Errorf("GPU %s of %s: util %.1f mem %.0f/%.0f power %.0f, served util %.1f mem %.0f/%.0f power %.0f", want.UUID, want.Pod,
					got.Util, got.MemUsedMiB, got.MemTotalMiB, got.PowerW, want.Util, want.MemUsedMiB, want.MemTotalMiB, want.PowerW)
			}
		}
		if _, ok := byUUID[forged.UUID]; !ok {
			t.Errorf("without a selector the forged series is read (the attack the selector stops), got %+v", gpus)
		}
		// A team's scope reads only its namespace's series; with the selector, not the
		// series a pod forged.
		bobs, err := onlyExporter.GPUs(ctx, usage.Scope{Namespaces: []string{"bob"}}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(bobs) != 1 || bobs[0].Pod != "serve-0" || bobs[0].UUID != exported[0].UUID {
			t.Errorf("bob's scope with the selector: %+v, want the exporter's GPU alone", bobs)
		}
		all, err := onlyExporter.GPUs(ctx, usage.Scope{}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(gpus)-1 {
			t.Errorf("every GPU with the selector: %d, want %d (all but the forged one)", len(all), len(gpus)-1)
		}
	})

	t.Run("JobSeries", func(t *testing.T) {
		s, err := c.JobSeries(ctx, []string{"alice/burst-0"}, start, end, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		busy := 0
		for _, pt := range s.GPUUtilization {
			if pt.Value > 90 {
				busy++
			}
		}
		if len(s.GPUUtilization) < 30 || busy < 3 || len(s.Pods) != 1 || s.Pods[0].Pod != "burst-0" {
			t.Fatalf("%d points, %d busy, pods %d: %+v", len(s.GPUUtilization), busy, len(s.Pods), s.GPUUtilization)
		}
		if m := s.MemoryUsage[len(s.MemoryUsage)-1].Value; math.Abs(m-1000.0/1024) > 0.01 {
			t.Errorf("memory %.3f GiB, want %.3f", m, 1000.0/1024)
		}
	})

	t.Run("Idle", func(t *testing.T) {
		pods := []usage.Pod{
			{JobID: "alice.idle", Namespace: "alice", Name: "idle", Pod: "idle-0", Phase: "Running", GPU: 1},
			{JobID: "alice.burst", Namespace: "alice", Name: "burst", Pod: "burst-0", Phase: "Running", GPU: 1},
			{JobID: "alice.sft", Namespace: "alice", Name: "sft", Pod: "sft-0", Phase: "Running", GPU: 2},
			{JobID: "alice.dark", Namespace: "alice", Name: "dark", Pod: "dark-0", Phase: "Running", GPU: 4},
		}
		rows, err := c.Idle(ctx, usage.Scope{Namespaces: []string{"alice"}}, pods, usage.IdleOptions{Window: 3 * time.Hour, Step: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]usage.IdleJob{}
		for _, r := range rows {
			got[r.JobID] = r
		}
		if _, ok := got["alice.sft"]; ok || len(rows) != 3 {
			t.Fatalf("rows %+v: want alice.idle, alice.burst and alice.dark (no series), not the busy alice.sft", rows)
		}
		if idle := got["alice.idle"]; time.Duration(idle.Now) < 170*time.Minute || idle.MemUsedMiB != 30000 {
			t.Errorf("alice.idle: idle now %s (want about 3h), memory held %.0f MiB", time.Duration(idle.Now), idle.MemUsedMiB)
		}
		if b := time.Duration(got["alice.burst"].Longest); b < 50*time.Minute || b > 60*time.Minute {
			t.Errorf("alice.burst: longest idle run %s, want about 55m (a 5-minute burst each hour)", b)
		}
		if !got["alice.dark"].NoSeries {
			t.Errorf("alice.dark: %+v, want no series", got["alice.dark"])
		}
	})

	t.Run("GPUChangedPods", func(t *testing.T) { testGPUChangedPods(ctx, t, c, p, exporters[dcgmtest.Plain], plain) })
}

// A GPU that another pod holds now: only its current series counts, not the ended pod's
// beside it (which stays in the window's range for minutes).
func testGPUChangedPods(ctx context.Context, t *testing.T, c *usage.Client, p *promtest.Prometheus, e *dcgmtest.Exporter, gpus []dcgmtest.GPU) {
	moved := append([]dcgmtest.GPU(nil), gpus...)
	moved[0].Pod, moved[0].Util, moved[0].MemUsedMiB = "next-0", 10, 5000
	e.Set(moved)
	if err := p.WaitScraped(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.GPUs(ctx, usage.Scope{Namespaces: []string{"alice"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if g.UUID != moved[0].UUID {
			continue
		}
		if g.Pod != "next-0" || g.MemUsedMiB != 5000 || g.MemTotalMiB != moved[0].MemTotalMiB {
			t.Errorf("GPU %s: %s, memory %.0f/%.0f; want next-0's, %.0f/%.0f", g.UUID, g.Pod, g.MemUsedMiB, g.MemTotalMiB, 5000.0, moved[0].MemTotalMiB)
		}
		return
	}
	t.Errorf("GPU %s missing from %+v", moved[0].UUID, got)
}

// waitUp waits until Prometheus has scraped the targets of a job once.
func waitUp(t *testing.T, p *promtest.Prometheus, job string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		v, _, _, err := p.API.Query(t.Context(), `up{job="`+job+`"} == 1`, time.Now())
		if err == nil && v.String() != "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %s not scraped after 30s", job)
}

func TestSelector(t *testing.T) {
	for _, ok := range []string{"", `job="dcgm-exporter"`, ` job = "a" , namespace=~"gpu-.*",container!="x\"y"`} {
		if _, err := usage.New(usage.Options{URL: "http://p:9090", Selector: ok}); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{`job=dcgm`, `job="a"} or vector(1) or {x="`, `job="a",`, `job="a" namespace="b"`, `"a"`, `job="a"}[5m]`} {
		if _, err := usage.New(usage.Options{URL: "http://p:9090", Selector: bad}); err == nil || !strings.Contains(err.Error(), "--prometheus-selector") {
			t.Errorf("%q: %v, want it refused naming --prometheus-selector", bad, err)
		}
	}
}

func TestNoPrometheus(t *testing.T) {
	if _, err := usage.New(usage.Options{}); err != usage.ErrNoPrometheus {
		t.Fatalf("New without a URL: %v", err)
	}
	if _, err := usage.New(usage.Options{URL: "ftp://user:secret@host"}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("a bad URL: %v (and never its password)", err)
	}
	c, err := usage.New(usage.Options{URL: "http://user:secret@127.0.0.1:1", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GPUs(context.Background(), usage.Scope{}, 0)
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Prometheus down: %v; want an error naming it, without its password", err)
	}
}
