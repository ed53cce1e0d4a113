package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/usage"
)

// top, idle and describe job's Usage against a stub of Prometheus' query API (answering
// each query of package usage from the GPUs below) and a stub of the daemon's API (--server)
// for the read model; test/e2e runs top against a real Prometheus.

// stubGPU is a GPU the Prometheus stub serves, in dcgm-exporter's labels.
type stubGPU struct {
	node, gpu, ns, pod        string
	util, used, free, power   float64
	exported, noPod, noSeries bool
}

// promStub answers /api/v1/query and /api/v1/query_range as Prometheus does, from gpus;
// a pod's utilization over time (range queries) is busy(pod, t) when set, else its GPUs' util.
type promStub struct {
	gpus []stubGPU
	busy func(pod string, t time.Time) (float64, bool)
	mu   sync.Mutex
	seen []string
}

func (p *promStub) labels(g stubGPU, perGPU bool) map[string]string {
	m := map[string]string{}
	if !g.noPod {
		if g.exported {
			m["exported_namespace"], m["exported_pod"], m["namespace"], m["pod"] = g.ns, g.pod, "gpu-operator", "dcgm-exporter-x"
		} else {
			m["namespace"], m["pod"] = g.ns, g.pod
		}
	}
	if perGPU {
		m["Hostname"], m["gpu"], m["UUID"], m["modelName"] = g.node, g.gpu, "GPU-"+g.node+"-"+g.gpu, "NVIDIA H100 80GB HBM3"
	}
	return m
}

// value picks the stubbed value of a query's metric for a GPU.
func metricOf(q string, g stubGPU) float64 {
	switch {
	case strings.Contains(q, usage.MetricFBUsed):
		return g.used
	case strings.Contains(q, usage.MetricFBFree):
		return g.free
	case strings.Contains(q, usage.MetricPower):
		return g.power
	}
	return g.util
}

// selected reports whether a query's namespace=~ and pod=~ matchers (either label form)
// select the GPU's series.
func selected(q string, g stubGPU) bool {
	for label, value := range map[string]string{"namespace": g.ns, "pod": g.pod} {
		m := regexp.MustCompile(label + `=~("(?:[^"\\]|\\.)*")`).FindStringSubmatch(q)
		if m == nil {
			continue
		}
		re, err := strconv.Unquote(m[1])
		if err != nil || !regexp.MustCompile("^(?:"+re+")$").MatchString(value) {
			return false
		}
	}
	return true
}

func (p *promStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	q := r.Form.Get("query")
	p.mu.Lock()
	p.seen = append(p.seen, q)
	gpus := slices.DeleteFunc(slices.Clone(p.gpus), func(g stubGPU) bool { return g.noSeries || !selected(q, g) })
	p.mu.Unlock()
	agg, _, _ := strings.Cut(q, " by ")
	type series struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value,omitempty"`
		Values [][]any           `json:"values,omitempty"`
	}
	var out []series
	// instant queries: per GPU (max by the GPU's labels), or per pod (avg, sum)
	if strings.HasSuffix(r.URL.Path, "/query") {
		ts, _ := strconv.ParseFloat(r.Form.Get("time"), 64)
		perPod := map[string]*series{}
		for _, g := range gpus {
			v := metricOf(q, g)
			if agg == "max" {
				out = append(out, series{Metric: p.labels(g, true), Value: []any{ts, strconv.FormatFloat(v, 'f', -1, 64)}})
				continue
			}
			s := perPod[g.ns+"/"+g.pod]
			if s == nil {
				s = &series{Metric: p.labels(g, false), Value: []any{ts, "0"}}
				perPod[g.ns+"/"+g.pod] = s
			}
			old, _ := strconv.ParseFloat(s.Value[1].(string), 64)
			s.Value[1] = strconv.FormatFloat(old+v, 'f', -1, 64) // sum; avg is tested with one GPU a pod
		}
		for _, s := range perPod {
			out = append(out, *s)
		}
		writePromAnswer(w, "vector", out)
		return
	}
	// range queries, per pod: max (the idle audit), sum and count (a job's series)
	start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
	end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
	step, _ := time.ParseDuration(r.Form.Get("step") + "s")
	if step == 0 {
		f, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		step = time.Duration(f * float64(time.Second))
	}
	pods := map[string][]stubGPU{}
	var order []string
	for _, g := range gpus {
		k := g.ns + "/" + g.pod
		if pods[k] == nil {
			order = append(order, k)
		}
		pods[k] = append(pods[k], g)
	}
	for _, k := range order {
		gs := pods[k]
		s := series{Metric: p.labels(gs[0], false)}
		for t := time.Unix(int64(start), 0); !t.After(time.Unix(int64(end), 0)); t = t.Add(step) {
			var v float64
			switch {
			case agg == "count":
				v = float64(len(gs))
			case p.busy != nil && strings.Contains(q, usage.MetricGPUUtil):
				b, ok := p.busy(gs[0].pod, t)
				if !ok {
					continue
				}
				v = b
				if agg == "sum" {
					v *= float64(len(gs))
				}
			default:
				for _, g := range gs {
					if agg == "max" {
						v = max(v, metricOf(q, g))
					} else {
						v += metricOf(q, g)
					}
				}
			}
			s.Values = append(s.Values, []any{float64(t.Unix()), strconv.FormatFloat(v, 'f', -1, 64)})
		}
		out = append(out, s)
	}
	writePromAnswer(w, "matrix", out)
}

func writePromAnswer(w http.ResponseWriter, typ string, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": typ, "result": result}})
}

// queries are the PromQL queries the stub answered.
func (p *promStub) queries() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// GiB in MiB.
const mib = 1024

// usageFixture are the GPUs and the read model of the tests: alice.sft (two ranks, one
// GPU each, in the plain and in kube-prometheus-stack's exported labels: 87% and 13%),
// bob.nb (one GPU, 0%, 10 GiB held), bob.dark (one GPU, no series at all), and a node's GPU
// that no pod holds.
func usageFixture() ([]stubGPU, cluster.JobPodList, cluster.NodeList) {
	gpus := []stubGPU{
		{node: "gpu-0", gpu: "0", ns: "alice", pod: "sft-0", util: 87, used: 40 * mib, free: 40 * mib, power: 612},
		{node: "gpu-1", gpu: "0", ns: "alice", pod: "sft-1", util: 13, used: 20 * mib, free: 60 * mib, power: 100, exported: true},
		{node: "gpu-1", gpu: "1", ns: "bob", pod: "nb-0", util: 0, used: 10 * mib, free: 70 * mib, power: 60},
		{node: "gpu-1", gpu: "2", noPod: true, util: 0, used: 0, free: 80 * mib, power: 50},
		{node: "gpu-2", gpu: "0", ns: "bob", pod: "dark-0", noSeries: true},
	}
	row := func(ns, name, kind, pod, node string, rank int) cluster.JobPod {
		return cluster.JobPod{JobID: ns + "." + name, Name: name, Namespace: ns, Kind: kind, Pod: pod, Node: node, Phase: "Running",
			Status: "Running", GPU: 1, Pool: "training-pool", GPUType: "h100", Rank: ptrTo(rank)}
	}
	pods := cluster.JobPodList{Items: []cluster.JobPod{
		row("alice", "sft", "training", "sft-0", "gpu-0", 0), row("alice", "sft", "training", "sft-1", "gpu-1", 1),
		row("bob", "dark", "training", "dark-0", "gpu-2", 0), row("bob", "nb", "notebook", "nb-0", "gpu-1", 0),
		{JobID: "bob.web", Name: "web", Namespace: "bob", Kind: "compute", Pod: "web-0", Phase: "Running", Status: "Running"},
	}}
	nodes := cluster.NodeList{Items: []cluster.NodeSummary{
		{NodeName: "gpu-0", Pool: "training-pool", GPUTotal: 8, GPUUsed: 1},
		{NodeName: "gpu-1", Pool: "training-pool", GPUTotal: 8, GPUUsed: 2},
		{NodeName: "gpu-2", Pool: "default", GPUTotal: 8, GPUUsed: 1},
		{NodeName: "cpu-0", Pool: "default"},
	}}
	return gpus, pods, nodes
}

// usageAPI is a stub of the daemon's API serving pods and nodes (filtered by ?namespace as
// the daemon does), a job description and, when metrics is set, the job's metrics route.
func usageAPI(t *testing.T, pods cluster.JobPodList, nodes cluster.NodeList, desc *cluster.JobDescription, metrics http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/jobpods", func(w http.ResponseWriter, r *http.Request) {
		out := cluster.JobPodList{Items: []cluster.JobPod{}}
		for _, p := range pods.Items {
			if ns := r.URL.Query().Get("namespace"); ns == "" || ns == p.Namespace {
				out.Items = append(out.Items, p)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"total": len(nodes.Items), "page": 1, "pageSize": 500, "items": nodes.Items})
	})
	if desc != nil {
		mux.HandleFunc("GET /api/v1/jobs/"+desc.Job.JobID+"/description", func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(desc)
		})
	}
	if metrics != nil {
		mux.HandleFunc("GET /api/v1/jobs/"+desc.Job.JobID+"/metrics", metrics)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// runCLI runs gpuctl with args and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(options.EnvPrometheusURL, "")
	var out, errOut bytes.Buffer
	code := Run(t.Context(), Streams{Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

// startUsage starts both stubs and returns the flags that name them.
func startUsage(t *testing.T, prom *promStub, desc *cluster.JobDescription, metrics http.HandlerFunc) []string {
	t.Helper()
	_, pods, nodes := usageFixture()
	api := usageAPI(t, pods, nodes, desc, metrics)
	flags := []string{"--server", api.URL, "--token", testToken}
	if prom != nil {
		ps := httptest.NewServer(prom)
		t.Cleanup(ps.Close)
		flags = append(flags, "--prometheus-url", ps.URL)
	}
	return flags
}

func TestTopJobsPrintsTheServedNumbers(t *testing.T) {
	gpus, _, _ := usageFixture()
	prom := &promStub{gpus: gpus}
	flags := startUsage(t, prom, nil, nil)
	out, errOut, code := runCLI(t, append([]string{"top", "jobs", "-A"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// alice.sft: (87+13)/2 = 50%, 40+20 of 80+80 GiB, 612+100 W; bob.dark has no series: "-",
	// not 0%; bob.web requests no GPU; the GPU no pod holds is no job's.
	want := `NAMESPACE   JOB    KIND       GPUS   UTIL(5m)   MEMORY           POWER(5m)
alice       sft    training   2      50%        60.0/160.0 GiB   712 W
bob         dark   training   1      -          -                -
bob         nb     notebook   1      0%         10.0/80.0 GiB    60 W
`
	if out != want {
		t.Errorf("top jobs -A:\n%s\nwant\n%s", out, want)
	}
	for _, q := range prom.queries() {
		if strings.Contains(q, "namespace=~") {
			t.Errorf("-A reads every namespace, got %s", q)
		}
	}

	out, _, _ = runCLI(t, append([]string{"top", "jobs", "-A", "--sort-by", "util", "-o", "wide", "--window", "1h"}, flags...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAMESPACE   JOB    KIND       GPUS   UTIL(1h)") ||
		!strings.HasPrefix(lines[1], "alice") || !strings.HasPrefix(lines[2], "bob         nb") || !strings.HasPrefix(lines[3], "bob         dark") {
		t.Errorf("--sort-by util: highest first, no series last:\n%s", out)
	}
	if !strings.HasSuffix(lines[1], "training-pool   gpu-0,gpu-1   2      0") || !strings.HasSuffix(lines[3], "training-pool   <none>        -      -") {
		t.Errorf("-o wide: pool, nodes, busy and idle GPUs:\n%s", out)
	}

	prom.seen = nil
	out, _, code = runCLI(t, append([]string{"top", "jobs", "-n", "alice", "-o", "json"}, flags...)...)
	var list TopList[usage.JobTop]
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 {
		t.Fatalf("-o json (exit %d): %v\n%s", code, err, out)
	}
	if time.Duration(list.Window) != 5*time.Minute || !strings.Contains(out, `"window": "5m0s"`) || len(list.Items) != 1 ||
		list.Items[0].Util != 50 || list.Items[0].MemUsedMiB != 60*mib || len(list.Items[0].GPUList) != 2 {
		t.Errorf("-o json -n alice: %s", out)
	}
	if qs := prom.queries(); len(qs) == 0 || !strings.Contains(qs[0], `namespace=~"alice"`) {
		t.Errorf("-n alice reads alice's series only: %v", qs)
	}
}

func TestTopNodesAndPools(t *testing.T) {
	gpus, _, _ := usageFixture()
	flags := startUsage(t, &promStub{gpus: gpus}, nil, nil)
	out, errOut, code := runCLI(t, append([]string{"top", "nodes"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// gpu-1: 2 allocated, sft-1 busy (13%), nb-0 idle: BUSY% 50; the unheld GPU counts in
	// UTIL (13+0+0)/3 and MEMORY; gpu-2's GPU has no series; cpu-0 has no GPU.
	want := `NODE    POOL            GPUS   ALLOC   BUSY%   UTIL(5m)   MEMORY           POWER(5m)
gpu-0   training-pool   8      1       100%    87%        40.0/80.0 GiB    612 W
gpu-1   training-pool   8      2       50%     4%         30.0/240.0 GiB   210 W
gpu-2   default         8      1       -       -          -                -
`
	if out != want {
		t.Errorf("top nodes:\n%s\nwant\n%s", out, want)
	}
	out, _, _ = runCLI(t, append([]string{"top", "pools", "--sort-by", "gpus"}, flags...)...)
	want = `POOL            NODES   GPUS   ALLOC   BUSY%   UTIL(5m)   MEMORY
training-pool   2       16     3       67%     25%        70.0/320.0 GiB
default         1       8      1       -       -          -
`
	if out != want {
		t.Errorf("top pools --sort-by gpus:\n%s\nwant\n%s", out, want)
	}
}

func TestTopHostileLabels(t *testing.T) {
	// Prometheus' label values are whoever runs the exporter's, or a pod's: a node's name
	// with a terminal's escape sequences (retitle, clear the screen) is printed escaped.
	gpus, _, _ := usageFixture()
	gpus = append(gpus, stubGPU{node: "evil\x1b]0;pwned\x07\x1b[2J", gpu: "0", noPod: true, util: 1, free: 80 * mib})
	gpus[0].node = "gpu-0\x1b[31m"
	flags := startUsage(t, &promStub{gpus: gpus}, nil, nil)
	for _, args := range [][]string{{"top", "nodes"}, {"top", "pools", "-o", "wide"}, {"top", "jobs", "-A", "-o", "wide"}} {
		out, errOut, code := runCLI(t, append(args, flags...)...)
		if code != 0 || strings.ContainsAny(out+errOut, "\x1b\x07") {
			t.Errorf("%v (exit %d): a label's control characters reached the terminal:\n%q\n%s", args, code, out, errOut)
		}
		if args[1] == "nodes" && !strings.Contains(out, `evil\x1b]0;pwned\x07\x1b[2J`) {
			t.Errorf("top nodes: the node of the series, escaped:\n%s", out)
		}
		if args[1] == "jobs" && !strings.Contains(out, `gpu-0\x1b[31m,gpu-1`) {
			t.Errorf("top jobs -o wide: NODES escaped:\n%s", out)
		}
	}
}

func TestTopWithoutPrometheusExitsTwo(t *testing.T) {
	for _, args := range [][]string{{"top", "jobs", "-A"}, {"top", "nodes"}, {"top", "pools"}, {"idle", "-A"}} {
		// no daemon either: nothing is read before the Prometheus is known
		out, errOut, code := runCLI(t, append(args, "--server", "http://127.0.0.1:1", "--token", testToken)...)
		if code != ExitTrouble || out != "" || errOut != "error: "+usage.ErrNoPrometheus.Error()+"\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for args, want := range map[string]string{
		"top jobs --sort-by cpu":   `--sort-by "cpu": want one of util, memory, power, gpus, name`,
		"top nodes --window 0s":    "--window 0s: want a positive duration",
		"idle --for 0s":            "--for 0s: want a positive duration",
		"idle --threshold 0":       "--threshold 0: want a utilization in percent",
		"top jobs -o name":         `unsupported output format "name"`,
		"idle --prometheus-url x:": `--prometheus-url "x:": want http(s)://host[:port][/prefix]`,
	} {
		_, errOut, code := runCLI(t, append(strings.Fields(args), "--prometheus-url", "http://127.0.0.1:1")...)
		if strings.Contains(args, "x:") {
			_, errOut, code = runCLI(t, strings.Fields(args)...)
		}
		if code != ExitTrouble || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, %s", args, code, errOut)
		}
	}
}

func TestIdleListsByTheLongestRun(t *testing.T) {
	gpus, _, _ := usageFixture()
	// sft-0 is busy throughout; sft-1 and nb-0 are idle. The job alice.sft is busy.
	prom := &promStub{gpus: gpus, busy: func(pod string, t time.Time) (float64, bool) {
		if pod == "sft-0" {
			return 90, true
		}
		return 0, true
	}}
	flags := startUsage(t, prom, nil, nil)
	out, errOut, code := runCLI(t, append([]string{"idle", "-A"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `NAMESPACE   JOB    KIND       GPUS   IDLE-NOW    LONGEST-IDLE   AVG-UTIL    GPU-MEM-HELD
bob         nb     notebook   1      3h          3h             0%          10.0 GiB
bob         dark   training   1      no series   no series      no series   -
`
	if out != want {
		t.Errorf("idle -A:\n%s\nwant\n%s", out, want)
	}

	// A 10-minute burst 40 minutes ago: the run going on now is 40m, the longest 2h10m.
	now := time.Now()
	prom.busy = func(pod string, t time.Time) (float64, bool) {
		if pod == "nb-0" && t.After(now.Add(-50*time.Minute)) && !t.After(now.Add(-40*time.Minute)) {
			return 70, true
		}
		return prom2(pod), true
	}
	out, _, _ = runCLI(t, append([]string{"idle", "-n", "bob", "--step", "1m", "-o", "json"}, flags...)...)
	var rep IdleReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Items) != 2 {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	nb := rep.Items[0]
	if nb.JobID != "bob.nb" || time.Duration(nb.Now) < 39*time.Minute || time.Duration(nb.Now) > 41*time.Minute ||
		time.Duration(nb.Longest) < 129*time.Minute || time.Duration(nb.Longest) > 131*time.Minute {
		t.Errorf("a burst ends the run: now %s, longest %s", time.Duration(nb.Now), time.Duration(nb.Longest))
	}
	if !strings.Contains(out, `"window": "3h0m0s"`) || !strings.Contains(out, `"threshold": 5`) || !rep.Items[1].NoSeries {
		t.Errorf("-o json:\n%s", out)
	}

	// Above the threshold throughout: none listed, one line on standard error, exit 0.
	prom.busy = func(string, time.Time) (float64, bool) { return 50, true }
	out, errOut, code = runCLI(t, append([]string{"idle", "-n", "alice", "--threshold", "10", "--for", "1h"}, flags...)...)
	if code != 0 || out != "" || errOut != "No job was idle below 10% for 1h in the last 3h.\n" {
		t.Errorf("none idle: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// gpuctl idle --policy says what a gpuctl-policy.yaml's idle rules do to each job listed.
func TestIdlePolicyColumn(t *testing.T) {
	gpus, _, _ := usageFixture()
	prom := &promStub{gpus: gpus, busy: func(pod string, _ time.Time) (float64, bool) { return prom2(pod), true }}
	flags := startUsage(t, prom, nil, nil)
	policy := filepath.Join(t.TempDir(), "gpuctl-policy.yaml")
	write := func(text string) {
		if err := os.WriteFile(policy, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`version: v0.1
idle:
  - name: notebooks
    kinds: [notebook]
    for: 4h
    warnBefore: 90m
    action: pause
  - for: 8h
    threshold: 10
`)
	out, errOut, code := runCLI(t, append([]string{"idle", "-A", "--policy", policy}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// nb has been idle the whole 3h window: warned, paused in 1h; dark has no series.
	want := `NAMESPACE   JOB    KIND       GPUS   IDLE-NOW    LONGEST-IDLE   AVG-UTIL    GPU-MEM-HELD   POLICY
bob         nb     notebook   1      3h          3h             0%          10.0 GiB       notebooks: warned: pause in 1h
bob         dark   training   1      no series   no series      no series   -              idle[1]: never paused (no series) (its threshold 10%)
`
	if out != want {
		t.Errorf("idle --policy:\n%s\nwant\n%s", out, want)
	}
	write("version: v0.1\nidle:\n  - for: 2h\n    action: pause\n")
	out, _, _ = runCLI(t, append([]string{"idle", "-n", "bob", "--policy", policy, "-o", "json"}, flags...)...)
	if !strings.Contains(out, `"bob.nb": "idle[0]: pause due (idle 3h, rule 2h)"`) {
		t.Errorf("-o json, a rule due:\n%s", out)
	}
	write("version: v0.1\nidle:\n  - for: 2h\n    action: stop\n")
	_, errOut, code = runCLI(t, append([]string{"idle", "-A", "--policy", policy}, flags...)...)
	if code != ExitTrouble || !strings.Contains(errOut, "gpuctl-policy.yaml:4: idle[0].action") {
		t.Errorf("an invalid policy: exit %d, %s; want 2 naming the file, line and field", code, errOut)
	}
}

// prom2 is the idle test's utilization of pods other than a burst: sft-0 busy, others idle.
func prom2(pod string) float64 {
	if pod == "sft-0" {
		return 90
	}
	return 0
}

func TestSparkline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ps []usage.Point
	for i, v := range []float64{0, 14.3, 28.6, 42.9, 57.1, 71.4, 85.7, 100} {
		ps = append(ps, usage.Point{Timestamp: start.Add(time.Duration(i) * time.Minute), Value: v})
	}
	end := start.Add(7 * time.Minute)
	if got := sparkline(ps, start, end, time.Minute, 60, 100); got != "▁▂▃▄▅▆▇█" {
		t.Errorf("one column a step: %q", got)
	}
	// A missing point is a gap, not a low bar.
	gapped := slices.Delete(slices.Clone(ps), 3, 5)
	if got := sparkline(gapped, start, end, time.Minute, 60, 100); got != "▁▂▃  ▆▇█" {
		t.Errorf("gaps: %q", got)
	}
	// Scaled to the maximum without a top; the columns average their points.
	if got := sparkline(ps, start, end, time.Minute, 4, 0); got != "▂▄▅▇" {
		t.Errorf("4 columns: %q", got)
	}
	// 24 h at 15 s: no more than 60 columns.
	var long []usage.Point
	for ts := start; !ts.After(start.Add(24 * time.Hour)); ts = ts.Add(15 * time.Second) {
		long = append(long, usage.Point{Timestamp: ts, Value: 1})
	}
	if got := sparkline(long, start, start.Add(24*time.Hour), 15*time.Second, sparkWidth, 1); len([]rune(got)) != 60 || strings.Trim(got, "█") != "" {
		t.Errorf("a day: %d columns %q", len([]rune(got)), got)
	}
}

// sftDescription is alice.sft as describe reads it: two ranks, started 2 h ago.
func sftDescription(now time.Time) cluster.JobDescription {
	started := now.Add(-2 * time.Hour)
	return cluster.JobDescription{
		Job: cluster.JobDetail{JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Status: "Running",
			CreatedAt: started.Add(-time.Minute), StartedAt: &started, K8sResources: cluster.K8sResources{Kind: "Job", JobName: "sft"}},
		Pods: []cluster.JobPod{
			{Pod: "sft-0", Namespace: "alice", Status: "Running", Rank: ptrTo(0)},
			{Pod: "sft-1", Namespace: "alice", Status: "Running", Rank: ptrTo(1)},
		},
		Events: []cluster.Event{},
	}
}

func TestDescribeJobUsage(t *testing.T) {
	gpus, _, _ := usageFixture()
	now := time.Now()
	// util rises from 0 to 100 over the job's 2 h on sft-0; sft-1 is idle.
	prom := &promStub{gpus: gpus, busy: func(pod string, t time.Time) (float64, bool) {
		if pod != "sft-0" {
			return 0, true
		}
		return min(100, max(0, 100*(1-now.Sub(t).Hours()/2))), true
	}}
	desc := sftDescription(now)
	flags := startUsage(t, prom, &desc, nil)
	out, errOut, code := runCLI(t, append([]string{"describe", "job", "alice.sft"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, section, ok := strings.Cut(out, "Usage (GPU, ")
	section, _, _ = strings.Cut(section, "Events:")
	if !ok {
		t.Fatalf("no Usage section:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(section), "\n")
	if len(lines) != 7 || !strings.HasSuffix(lines[0], "step 1m):") {
		t.Fatalf("Usage: a header, the job's two lines and two per rank:\n%s", section)
	}
	// the job: the average of its ranks, 0 to 50%; memory 40+20 GiB throughout
	if f := strings.Fields(lines[1]); f[0] != "job" || f[1] != "util" || !strings.HasPrefix(f[2], "▁") || !strings.HasSuffix(f[2], "▄") ||
		!strings.HasSuffix(lines[1], "min 0%  avg 25%  max 50%") {
		t.Errorf("job util: %q", lines[1])
	}
	if !strings.HasSuffix(lines[2], "min 60.0 GiB  avg 60.0 GiB  max 60.0 GiB") || !strings.Contains(lines[2], "████") {
		t.Errorf("job memory: %q", lines[2])
	}
	if !strings.HasPrefix(lines[3], "  sft-0 (rank 0)   util") || !strings.HasSuffix(lines[3], "max 100%") || !strings.Contains(lines[3], "█  ") ||
		!strings.HasPrefix(lines[5], "  sft-1 (rank 1)   util     ▁▁▁") {
		t.Errorf("per rank:\n%s", section)
	}
	if w := len([]rune(strings.Fields(lines[1])[2])); w > sparkWidth {
		t.Errorf("sparkline of %d columns", w)
	}
	var jobSeries []string
	for _, q := range prom.queries() {
		if strings.Contains(q, `pod=~"sft-0|sft-1"`) {
			jobSeries = append(jobSeries, q)
		}
	}
	if len(jobSeries) != 4 {
		t.Errorf("the job's series are read by its pods' names: %v", prom.queries())
	}

	// -o json is the description alone.
	out, _, _ = runCLI(t, append([]string{"describe", "job", "alice.sft", "-o", "json"}, flags...)...)
	if strings.Contains(out, "Usage (GPU") || !json.Valid([]byte(out)) || !strings.Contains(out, `"jobId": "alice.sft"`) {
		t.Errorf("-o json:\n%s", out)
	}
}

func TestDescribeJobUsageWithoutPrometheus(t *testing.T) {
	now := time.Now()
	desc := sftDescription(now)
	// --server without --prometheus-url: the daemon's metrics route; its 503 (no Prometheus
	// there either) is the line describe prints without --server, so both read the same.
	var asked []string
	answer := http.StatusServiceUnavailable
	flags := startUsage(t, nil, &desc, func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		if answer != http.StatusOK {
			w.WriteHeader(answer)
			fmt.Fprint(w, `{"error":"no Prometheus: gpuctl-reconciler runs without --prometheus-url, so it reads no GPU metrics (docs/metrics.md)","code":503}`)
			return
		}
		start := now.Add(-2 * time.Hour)
		s := usage.Series{Start: start, End: now, Step: "1m0s", Pods: []usage.PodSeries{{Pod: "sft-0"}}}
		for ts := start; !ts.After(now); ts = ts.Add(time.Minute) {
			s.GPUUtilization = append(s.GPUUtilization, usage.Point{Timestamp: ts, Value: 42})
			s.MemoryUsage = append(s.MemoryUsage, usage.Point{Timestamp: ts, Value: 12.5})
		}
		_ = json.NewEncoder(w).Encode(s)
	})
	out, errOut, code := runCLI(t, append([]string{"describe", "job", "alice.sft"}, flags...)...)
	if code != 0 || !strings.Contains(out, "\nUsage: no Prometheus (--prometheus-url)\n") {
		t.Errorf("the daemon without Prometheus: exit %d, %s\n%s", code, errOut, out)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "startTime=") || !strings.Contains(asked[0], "step=1m0s") {
		t.Errorf("metrics asked with %v", asked)
	}
	answer = http.StatusOK
	out, _, _ = runCLI(t, append([]string{"describe", "job", "alice.sft"}, flags...)...)
	if !strings.Contains(out, "  job   util     ▄▄▄▄") || !strings.Contains(out, "min 42%  avg 42%  max 42%") || !strings.Contains(out, "max 12.5 GiB") {
		t.Errorf("the daemon's series:\n%s", out)
	}

	// The kubeconfig's cluster and no Prometheus: one line.
	u := readJobUsage(context.Background(), &options.Prometheus{}, nil, desc, now)
	var b bytes.Buffer
	_ = describeUsage(&b, u)
	if b.String() != "Usage: no Prometheus (--prometheus-url)\n" {
		t.Errorf("without Prometheus: %q", b.String())
	}
	// A Prometheus that fails: its error, on one line.
	u = readJobUsage(context.Background(), &options.Prometheus{URL: "http://127.0.0.1:1"}, nil, desc, now)
	b.Reset()
	_ = describeUsage(&b, u)
	if !strings.HasPrefix(b.String(), "Usage: prometheus http://127.0.0.1:1: ") || strings.Count(b.String(), "\n") != 1 {
		t.Errorf("Prometheus down: %q", b.String())
	}
}
