package usage

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

func TestScopeQuotesEveryValue(t *testing.T) {
	// A pod name's dots and a hostile namespace's regexp or quote cannot widen the match.
	s := Scope{Pods: []string{"alice/sft-0.x", `bob/a"|.*`}}
	got := s.series(MetricFBUsed, "", 0)
	want := `(DCGM_FI_DEV_FB_USED{namespace=~"alice|bob",pod=~"a\"\\|\\.\\*|sft-0\\.x"} or ` +
		`DCGM_FI_DEV_FB_USED{exported_namespace=~"alice|bob",exported_pod=~"a\"\\|\\.\\*|sft-0\\.x"})`
	if got != want {
		t.Fatalf("series:\n got %s\nwant %s", got, want)
	}
	if all := (Scope{}).util("avg_over_time", 5*time.Minute); all != "(avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m]) or (avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[5m]) * 100))" {
		t.Fatalf("util of everything: %s", all)
	}
}

func TestLabelForms(t *testing.T) {
	plain := model.Metric{"namespace": "alice", "pod": "sft-0", "container": "main", "Hostname": "gpu-1", "UUID": "GPU-1", "gpu": "0"}
	exported := model.Metric{"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x", "exported_namespace": "alice",
		"exported_pod": "sft-0", "exported_container": "main", "hostname": "gpu-1", "UUID": "GPU-1", "gpu": "0"}
	for name, m := range map[string]model.Metric{"plain": plain, "exported": exported} {
		ns, pod, c := podOf(m)
		if ns != "alice" || pod != "sft-0" || c != "main" || nodeOf(m) != "gpu-1" {
			t.Errorf("%s: got %s/%s/%s on %q", name, ns, pod, c, nodeOf(m))
		}
	}
	if gpuKey(plain) != gpuKey(exported) {
		t.Error("the same GPU in both label forms has two keys")
	}
}

func TestLongestRun(t *testing.T) {
	step := time.Minute
	end := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	start := end.Add(-3 * time.Hour)
	// A 5-minute burst at the start of each hour, idle otherwise.
	vals := map[int64]float64{}
	for ts := start.Add(step); !ts.After(end); ts = ts.Add(step) {
		v := 0.0
		if (ts.Sub(start)-step)%time.Hour < 5*time.Minute {
			v = 90
		}
		vals[ts.UnixMilli()] = v
	}
	r := longestRun(vals, 5, step, end)
	if r.longest != 55*time.Minute || r.now != 55*time.Minute {
		t.Fatalf("longest %s, now %s; want 55m0s each (1h less a 5-minute burst)", r.longest, r.now)
	}
	// A missing step ends a run: nothing is known of it.
	delete(vals, end.Add(-30*time.Minute).UnixMilli())
	if r := longestRun(vals, 5, step, end); r.longest != 55*time.Minute || r.now != 30*time.Minute {
		t.Fatalf("with a gap: longest %s, now %s", r.longest, r.now)
	}
	// The run now peaks at its highest value below the threshold.
	vals[end.Add(-10*time.Minute).UnixMilli()] = 3.5
	if r := longestRun(vals, 5, step, end); r.now != 30*time.Minute || r.nowPeak != 3.5 {
		t.Fatalf("peak of the run now %v (run %s), want 3.5", r.nowPeak, r.now)
	}
	// Busy at the end: no run now.
	vals[end.UnixMilli()] = 50
	if r := longestRun(vals, 5, step, end); r.now != 0 {
		t.Fatalf("busy at the end, now %s", r.now)
	}
}

func TestIdleJobs(t *testing.T) {
	step, end := time.Minute, time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	o := IdleOptions{Window: time.Hour, Step: step, For: 30 * time.Minute}.withDefaults()
	pods := []Pod{
		{Pod: "nb-0", JobID: "alice.nb", Name: "nb", Namespace: "alice", Kind: "notebook", Phase: "Running", GPU: 4},
		{Pod: "sft-0", JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Phase: "Running", GPU: 8},
		{Pod: "sft-1", JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Phase: "Running", GPU: 8},
		{Pod: "dark-0", JobID: "bob.dark", Name: "dark", Namespace: "bob", Kind: "training", Phase: "Running", GPU: 2},
		{Pod: "done-0", JobID: "bob.done", Name: "done", Namespace: "bob", Kind: "training", Phase: "Succeeded", GPU: 2},
	}
	series := func(pod string, v func(i int) float64) *model.SampleStream {
		ss := &model.SampleStream{Metric: model.Metric{"namespace": "alice", "pod": model.LabelValue(pod)}}
		for i := 1; i <= 60; i++ {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(end.Add(time.Duration(i-60) * step).UnixNano()), Value: model.SampleValue(v(i))})
		}
		return ss
	}
	runs := model.Matrix{
		series("nb-0", func(int) float64 { return 0 }),
		// One rank idle, the other busy: the job is busy.
		series("sft-0", func(int) float64 { return 0 }),
		series("sft-1", func(int) float64 { return 80 }),
	}
	mem := model.Vector{{Metric: model.Metric{"exported_namespace": "alice", "exported_pod": "nb-0"}, Value: 40960}}
	got := idleJobs(pods, runs, nil, mem, o, end)
	if len(got) != 2 {
		t.Fatalf("rows %+v, want alice.nb and bob.dark", got)
	}
	if got[0].JobID != "alice.nb" || got[0].Now != Duration(time.Hour) || got[0].MemUsedMiB != 40960 || got[0].GPUs != 4 {
		t.Errorf("first row %+v", got[0])
	}
	if got[1].JobID != "bob.dark" || !got[1].NoSeries {
		t.Errorf("second row %+v, want bob.dark with no series", got[1])
	}
}

func TestTopJoinsPodsNodesPools(t *testing.T) {
	gpus := []GPU{
		{Node: "n1", Index: "0", UUID: "a", Namespace: "alice", Pod: "sft-0", Util: 90, HasUtil: true, MemUsedMiB: 70000, MemTotalMiB: 81559, PowerW: 600},
		{Node: "n1", Index: "1", UUID: "b", Namespace: "alice", Pod: "sft-0", Util: 2, HasUtil: true, MemUsedMiB: 1000, MemTotalMiB: 81559, PowerW: 80},
		{Node: "n2", Index: "0", UUID: "c", Util: 0, HasUtil: true, MemTotalMiB: 81559},
	}
	pods := []Pod{{Pod: "sft-0", JobID: "alice.sft", Name: "sft", Namespace: "alice", Phase: "Running", GPU: 2, Pool: "train"}}
	jobs := TopJobs(pods, gpus, DefaultIdleThreshold)
	if len(jobs) != 1 || jobs[0].Util != 46 || jobs[0].MemUsedMiB != 71000 || jobs[0].Busy != 1 || jobs[0].Idle != 1 || jobs[0].PowerW != 680 {
		t.Fatalf("jobs %+v", jobs)
	}
	nodes := TopNodes([]Node{{Name: "n1", Pool: "train", GPUs: 8, Allocated: 2}, {Name: "n2", Pool: "train", GPUs: 8}}, gpus, DefaultIdleThreshold)
	if len(nodes) != 2 || nodes[0].BusyAllocated != 1 || nodes[0].BusyShare != 0.5 || nodes[1].Reporting != 1 {
		t.Fatalf("nodes %+v", nodes)
	}
	pools := TopPools(nodes, DefaultIdleThreshold)
	if len(pools) != 1 || pools[0].GPUs != 16 || pools[0].Allocated != 2 || pools[0].BusyShare != 0.5 || pools[0].Reporting != 3 {
		t.Fatalf("pools %+v", pools)
	}
	if !strings.Contains(by("max", gpuLabels, "x"), "exported_pod") {
		t.Fatal("gpu labels lack the exported form")
	}
}

func TestIdleJobsExporterRestarted(t *testing.T) {
	// Behind kube-prometheus-stack's ServiceMonitor the plain namespace and pod name the
	// exporter: when its pod is replaced within the window, a job's pod has two series, the
	// old exporter's and the new one's. Both count: the run spans them, memory is not doubled.
	step, end := time.Minute, time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	o := IdleOptions{Window: time.Hour, Step: step, For: 30 * time.Minute}.withDefaults()
	pods := []Pod{{Pod: "nb-0", JobID: "alice.nb", Name: "nb", Namespace: "alice", Kind: "notebook", Phase: "Running", GPU: 1}}
	labels := func(exporter string) model.Metric {
		return model.Metric{"namespace": "gpu-operator", "pod": model.LabelValue(exporter), "exported_namespace": "alice", "exported_pod": "nb-0"}
	}
	series := func(exporter string, from, to int) *model.SampleStream {
		ss := &model.SampleStream{Metric: labels(exporter)}
		for i := from; i <= to; i++ {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(end.Add(time.Duration(i-60) * step).UnixNano())})
		}
		return ss
	}
	runs := model.Matrix{series("dcgm-new", 31, 60), series("dcgm-old", 1, 30)}
	avg := model.Vector{{Metric: labels("dcgm-new"), Value: 1}, {Metric: labels("dcgm-old"), Value: 3}}
	mem := model.Vector{{Metric: labels("dcgm-new"), Value: 40960}, {Metric: labels("dcgm-old"), Value: 40960}}
	got := idleJobs(pods, runs, avg, mem, o, end)
	if len(got) != 1 || got[0].Now != Duration(time.Hour) || got[0].Longest != Duration(time.Hour) {
		t.Fatalf("rows %+v, want alice.nb idle for the whole hour, across both exporters' series", got)
	}
	if got[0].MemUsedMiB != 40960 || got[0].AvgUtil != 2 {
		t.Errorf("memory %g MiB, avg %g%%: want 40960 (not twice) and 2 (both series)", got[0].MemUsedMiB, got[0].AvgUtil)
	}
}
