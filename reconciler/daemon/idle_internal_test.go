package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/notify"
	gitsource "github.com/gpuctl/gpuctl/sources/git"
	"github.com/gpuctl/gpuctl/test/gittest"
	"github.com/gpuctl/gpuctl/usage"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// promStub answers Prometheus' query API for the GPUs of pods: gpus[ns/pod] GPUs each, whose
// utilization idle[ns/pod] says: idle (0 %) for that long up to now, busy (90 %) before; a pod
// absent from idle is busy, one absent from gpus has no series.
type promStub struct {
	mu    sync.Mutex
	gpus  map[string]int
	idle  map[string]time.Duration
	calls int
	down  bool // answers 503
}

func (s *promStub) util(pod string, at, now time.Time) float64 {
	if d, ok := s.idle[pod]; ok && !at.Before(now.Add(-d)) {
		return 0
	}
	return 90
}

func (s *promStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	_ = r.ParseForm()
	q := r.Form.Get("query")
	now := time.Now()
	type sample struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value,omitempty"`
		Values [][]any           `json:"values,omitempty"`
	}
	var result []sample
	for key, n := range s.gpus {
		ns, pod, _ := strings.Cut(key, "/")
		for i := range n {
			m := map[string]string{"namespace": ns, "pod": pod, "gpu": strconv.Itoa(i), "UUID": fmt.Sprintf("GPU-%s-%d", pod, i), "Hostname": "node-1", "modelName": "NVIDIA H100 80GB HBM3"}
			if strings.HasSuffix(r.URL.Path, "/query_range") {
				start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
				end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
				step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
				var vals [][]any
				for ts := start; ts <= end; ts += step {
					at := time.Unix(int64(ts), 0)
					vals = append(vals, []any{ts, strconv.FormatFloat(s.util(key, at, now), 'f', -1, 64)})
				}
				result = append(result, sample{Metric: m, Values: vals})
				continue
			}
			v := 0.0
			switch {
			case strings.Contains(q, usage.MetricGPUUtil):
				v = s.util(key, now, now)
			case strings.Contains(q, usage.MetricFBUsed):
				v = 20480
			case strings.Contains(q, usage.MetricFBFree):
				v = 61440
			case strings.Contains(q, usage.MetricPower):
				v = 100
			}
			result = append(result, sample{Metric: m, Value: []any{float64(now.Unix()), strconv.FormatFloat(v, 'f', -1, 64)}})
		}
	}
	typ := "vector"
	if strings.HasSuffix(r.URL.Path, "/query_range") {
		typ = "matrix"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": typ, "result": result}})
}

// gpuPod is a running pod of a gpuctl job holding gpus GPUs.
func gpuPod(ns, job, kind, pod string, gpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod, Labels: map[string]string{
			keys.ManagedBy: keys.ManagedByValue, keys.App: job, keys.JobType: kind, keys.Pool: "gpu-pool"}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{keys.GPUType: "h100"}, Containers: []corev1.Container{{Name: job,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
				Limits: corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// idleTree is a repository of two teams: alice's notebook nb (4 GPUs) and training sft (2),
// bob's service web (1); policy is its gpuctl-policy.yaml's idle list.
func idleTree(policy string) map[string]string {
	return map[string]string{
		".gpuctl.yaml":       "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"gpuctl-policy.yaml": "version: v0.1\nidle:\n" + policy,
		"teams/alice/nb.yaml": "kind: notebook\nversion: v0.1\njob: {name: nb}\nenvironment: {image: jupyter/base-notebook}\n" +
			"resources: {pool: gpu-pool, gpu: 4, cpu: 4, memory: 16Gi}\n",
		"teams/alice/sft.yaml": trainingFile("sft", "trainer:v1", "", 2, 1),
		"teams/bob/web.yaml": "kind: inference\nversion: v0.1\njob: {name: web}\nenvironment: {image: vllm:v1}\n" +
			"service: {replicas: 1, port: 8000}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\n",
	}
}

// idleHarness is a daemon over a Git source of idleTree(policy) that pushes its writes, a
// fake cluster with the jobs' running pods, and the Prometheus stub.
type idleHarness struct {
	d      *Daemon
	remote *gittest.Remote
	kube   *fake.Clientset
	prom   *promStub
	reg    *prometheus.Registry
}

func newIdleHarness(t *testing.T, policy string, idle map[string]time.Duration) *idleHarness {
	t.Helper()
	h := &idleHarness{remote: gittest.New(t, nil), prom: &promStub{gpus: map[string]int{"alice/nb-0": 4, "alice/sft-0": 2, "bob/web-1": 1}, idle: idle}}
	h.remote.Commit("teams", idleTree(policy))
	srv := httptest.NewServer(h.prom)
	t.Cleanup(srv.Close)
	client, err := usage.New(usage.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	src, err := gitsource.New(gitsource.DefaultOptions(h.remote.URL, "main"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	h.kube = fake.NewClientset(
		gpuPod("alice", "nb", "notebook", "nb-0", 4), gpuPod("alice", "sft", "training", "sft-0", 2), gpuPod("bob", "web", "inference", "web-1", 1),
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "alice", Name: "nb", UID: "uid-nb"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "alice", Name: "sft", UID: "uid-sft"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "bob", Name: "cpu-only", Labels: map[string]string{keys.ManagedBy: keys.ManagedByValue, keys.App: "cpu"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	h.reg = prometheus.NewRegistry()
	h.d = New(Options{Source: src, Store: NewStore(h.kube, "gpuctl-system"), Usage: client, Writes: WriteOptions{Push: true}, Metrics: NewMetrics(h.reg)})
	rev, err := src.Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h.d.lastRev = rev
	return h
}

// round runs a round of the idle policy.
func (h *idleHarness) round(t *testing.T) []IdleAction {
	t.Helper()
	acts, err := h.d.idleRound(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

// commits are the remote's commit subjects, newest first.
func (h *idleHarness) commits() []string {
	return strings.Split(h.remote.Run(h.remote.Bare, "log", "--format=%s", "main"), "\n")
}

// events are the reasons and messages of the fake cluster's Events in ns, by object.
func (h *idleHarness) events(t *testing.T, ns string) []string {
	t.Helper()
	list, err := h.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == "" {
			t.Errorf("event %s: its object %s/%s has no uid", e.Name, e.InvolvedObject.Kind, e.InvolvedObject.Name)
		}
		out = append(out, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Type+" "+e.Reason+": "+e.Message)
	}
	return out
}

const notebooksPause = "  - {name: notebooks, for: 2h, warnBefore: 30m, action: pause, kinds: [notebook]}\n"

// TestIdlePolicyPausesOnce (issue #34): a notebook idle for 2h under a pause rule of 2h is
// paused by exactly one commit of gpuctl's, whose subject gives the reason; a second round
// makes none, nor does a daemon that starts afresh (the job is paused already); the busy
// training and the service that no rule matches are left alone.
func TestIdlePolicyPausesOnce(t *testing.T) {
	h := newIdleHarness(t, notebooksPause, map[string]time.Duration{"alice/nb-0": 3 * time.Hour, "bob/web-1": 5 * time.Hour})
	before := len(h.commits())
	acts := h.round(t)
	if len(acts) != 1 || acts[0].Reason != ReasonIdlePaused || acts[0].Job.String() != "alice.nb" || acts[0].Commit == "" {
		t.Fatalf("actions %+v, want one pause of alice.nb", acts)
	}
	subjects := h.commits()
	if len(subjects) != before+1 {
		t.Fatalf("commits %q, want one more", subjects)
	}
	if want := "gpuctl: pause job alice.nb (idle 0% for 2h on 4 × h100)"; subjects[0] != want {
		t.Errorf("commit subject %q, want %q", subjects[0], want)
	}
	if author := h.remote.Run(h.remote.Bare, "log", "-1", "--format=%an <%ae>", "main"); author != "gpuctl <gpuctl@gpuctl>" {
		t.Errorf("author %q", author)
	}
	if nb := h.remote.Run(h.remote.Bare, "show", "main:teams/alice/nb.yaml"); !strings.Contains(nb, "replicas: 0") {
		t.Errorf("the notebook is not paused in Git:\n%s", nb)
	}
	evs := h.events(t, "alice")
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "StatefulSet/nb Warning IdlePaused: idle below 5% for 2h") ||
		!strings.Contains(evs[0], "on 4 GPUs (h100): gpuctl paused it by policy notebooks in commit ") {
		t.Errorf("events %q", evs)
	}

	if acts := h.round(t); len(acts) != 0 {
		t.Errorf("the second round acted again: %+v", acts)
	}
	fresh := New(h.d.opts) // a restarted daemon: it remembers nothing
	fresh.lastRev = h.d.lastRev
	if acts, err := fresh.idleRound(t.Context()); err != nil || len(acts) != 0 {
		t.Errorf("a restarted daemon: %+v, %v", acts, err)
	}
	if n := len(h.commits()); n != before+1 {
		t.Errorf("%d commits after the later rounds, want %d: %q", n, before+1, h.commits())
	}
	if evs := h.events(t, "alice"); len(evs) != 1 {
		t.Errorf("events after the later rounds %q", evs)
	}
	if evs := h.events(t, "bob"); len(evs) != 0 {
		t.Errorf("bob's service, which no rule matches, has events %q", evs)
	}
}

// TestIdlePolicyWarnsAndReports: a notebook idle for 1h40m under a 2h rule that warns 30m before
// gets one IdleGPU Event and no commit; a report rule reports once and commits nothing; a busy
// job gets nothing; a job without series is told once, never paused.
func TestIdlePolicyWarnsAndReports(t *testing.T) {
	t.Run("warning", func(t *testing.T) {
		h := newIdleHarness(t, notebooksPause, map[string]time.Duration{"alice/nb-0": 100 * time.Minute})
		before := len(h.commits())
		acts := h.round(t)
		if len(acts) != 1 || acts[0].Reason != ReasonIdleGPU {
			t.Fatalf("actions %+v", acts)
		}
		want := "StatefulSet/nb Warning IdleGPU: idle below 5% for 1h40m on 4 GPUs (h100); gpuctl pauses it at 2h by policy notebooks"
		if evs := h.events(t, "alice"); len(evs) != 1 || evs[0] != want {
			t.Errorf("events %q, want %q", evs, want)
		}
		if acts := h.round(t); len(acts) != 0 {
			t.Errorf("warned twice in one idle run: %+v", acts)
		}
		if n := len(h.commits()); n != before {
			t.Errorf("a warning committed: %q", h.commits())
		}
	})
	t.Run("report", func(t *testing.T) {
		h := newIdleHarness(t, "  - {for: 1h, threshold: 10}\n", map[string]time.Duration{"alice/nb-0": 3 * time.Hour})
		before := len(h.commits())
		acts := h.round(t)
		if len(acts) != 1 || acts[0].Reason != ReasonIdleGPU || acts[0].Job.String() != "alice.nb" {
			t.Fatalf("actions %+v", acts)
		}
		want := "StatefulSet/nb Warning IdleGPU: idle below 10% for 1h on 4 GPUs (h100), the time of policy idle[0] (action report)"
		if evs := h.events(t, "alice"); len(evs) != 1 || evs[0] != want {
			t.Errorf("events %q, want %q", evs, want)
		}
		if acts := h.round(t); len(acts) != 0 {
			t.Errorf("reported twice in one idle run: %+v", acts)
		}
		if n := len(h.commits()); n != before {
			t.Errorf("a report committed: %q", h.commits())
		}
	})
	t.Run("no series", func(t *testing.T) {
		h := newIdleHarness(t, "  - {for: 1h, action: pause}\n", nil)
		delete(h.prom.gpus, "alice/sft-0")
		before := len(h.commits())
		acts := h.round(t)
		if len(acts) != 1 || acts[0].Reason != ReasonNoGPUMetrics || acts[0].Job.String() != "alice.sft" {
			t.Fatalf("actions %+v, want alice.sft without metrics (the others are busy)", acts)
		}
		if evs := h.events(t, "alice"); len(evs) != 1 || !strings.HasPrefix(evs[0], "Job/sft Warning NoGPUMetrics: no GPU metrics in Prometheus for its 2 GPUs (h100)") {
			t.Errorf("events %q", evs)
		}
		if acts := h.round(t); len(acts) != 0 {
			t.Errorf("told twice: %+v", acts)
		}
		if n := len(h.commits()); n != before {
			t.Errorf("a job without series was paused: %q", h.commits())
		}
	})
}

// TestIdlePolicyOfATeamIsIgnored: a gpuctl-policy.yaml that a team commits in its own
// directory, with a rule that pauses every job after a minute, is not the daemon's idle policy:
// only the one at the root is, whose rule here reports bob's jobs only, so alice's notebook,
// idle for 3 h, is neither paused nor reported.
func TestIdlePolicyOfATeamIsIgnored(t *testing.T) {
	h := newIdleHarness(t, "  - {for: 1h, teams: [bob]}\n", map[string]time.Duration{"alice/nb-0": 3 * time.Hour})
	h.remote.Commit("alice's policy", map[string]string{"teams/alice/gpuctl-policy.yaml": "version: v0.1\nidle:\n  - {for: 1m, action: pause}\n"})
	rev, err := h.d.opts.Source.Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h.d.lastRev = rev
	before := len(h.commits())
	if acts := h.round(t); len(acts) != 0 {
		t.Errorf("actions %+v, want none: only the root's gpuctl-policy.yaml is the idle policy", acts)
	}
	if n := len(h.commits()); n != before {
		t.Errorf("a team's own policy paused a job: %q", h.commits())
	}
	if evs := h.events(t, "alice"); len(evs) != 0 {
		t.Errorf("events %q", evs)
	}
}

// TestTeamGPUs: gpuctl_team_gpus holds per team and pool the GPUs the running pods request, and
// the busy and idle ones by the threshold of the job's rule.
func TestTeamGPUs(t *testing.T) {
	// alice's notebook idle (4), her training busy (2) but below the 95 % of its rule; bob's
	// service busy (1).
	h := newIdleHarness(t, "  - {for: 6h, threshold: 95, kinds: [training]}\n", map[string]time.Duration{"alice/nb-0": time.Hour})
	h.round(t)
	want := map[string]float64{
		"alice/gpu-pool/requested": 6, "alice/gpu-pool/busy": 0, "alice/gpu-pool/idle": 6,
		"bob/gpu-pool/requested": 1, "bob/gpu-pool/busy": 1, "bob/gpu-pool/idle": 0,
	}
	if got := teamGauge(t, h.reg); !maps.Equal(got, want) {
		t.Fatalf("gpuctl_team_gpus %v, want %v", got, want)
	}
	// bob's pod ends: its rows go.
	if err := h.kube.CoreV1().Pods("bob").Delete(t.Context(), "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.round(t)
	delete(want, "bob/gpu-pool/requested")
	delete(want, "bob/gpu-pool/busy")
	delete(want, "bob/gpu-pool/idle")
	if got := teamGauge(t, h.reg); !maps.Equal(got, want) {
		t.Fatalf("after bob's pod ended gpuctl_team_gpus %v, want %v", got, want)
	}
	// Prometheus does not answer: no value rather than a stale one.
	h.prom.mu.Lock()
	h.prom.down = true
	h.prom.mu.Unlock()
	if _, err := h.d.idleRound(t.Context()); err == nil {
		t.Fatal("a round without Prometheus did not fail")
	}
	if got := teamGauge(t, h.reg); len(got) != 0 {
		t.Fatalf("without Prometheus gpuctl_team_gpus %v, want none", got)
	}
}

// teamGauge is gpuctl_team_gpus by team/pool/state.
func teamGauge(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	return gauge(t, reg, "gpuctl_team_gpus", func(l map[string]string) string { return l["team"] + "/" + l["pool"] + "/" + l["state"] })
}

// gauge is the series of the gauge name in reg, each by key of its labels.
func gauge(t *testing.T, reg *prometheus.Registry, name string, key func(labels map[string]string) string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[key(l)] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestIdleGPUAlerts: the idle policy's warning of a job opens its IdleGPU condition (Key
// idle/<namespace>/<job>), its pause is one IdleGPU without a Key (always sent), and the end
// of its idle run closes the condition.
func TestIdleGPUAlerts(t *testing.T) {
	h := newIdleHarness(t, notebooksPause, map[string]time.Duration{"alice/nb-0": 100 * time.Minute})
	var alerts []notify.Event
	h.d.opts.Alerts = sendFunc(func(e notify.Event) { alerts = append(alerts, e) })
	take := func() []notify.Event { out := alerts; alerts = nil; return out }
	setIdle := func(d time.Duration) {
		h.prom.mu.Lock()
		defer h.prom.mu.Unlock()
		if d == 0 {
			delete(h.prom.idle, "alice/nb-0")
		} else {
			h.prom.idle["alice/nb-0"] = d
		}
	}

	h.round(t)
	got := take()
	if len(got) != 1 || got[0].Reason != notify.IdleGPU || got[0].Key != "idle/alice/nb" || got[0].Namespace != "alice" ||
		got[0].Object != "StatefulSet alice/nb" || got[0].Resolved || got[0].Severity != notify.SeverityWarning ||
		!strings.HasPrefix(got[0].Message, "idle below 5% for 1h40m on 4 GPUs (h100); gpuctl pauses it at 2h") {
		t.Fatalf("the warning sent %+v, want one IdleGPU of Key idle/alice/nb", got)
	}

	setIdle(3 * time.Hour)
	h.round(t)
	got = take()
	if len(got) != 1 || got[0].Reason != notify.IdleGPU || got[0].Key != "" || got[0].Resolved || got[0].Revision == "" ||
		!strings.Contains(got[0].Message, "gpuctl paused it by policy notebooks in commit ") {
		t.Fatalf("the pause sent %+v, want one IdleGPU without a Key, with its commit", got)
	}

	setIdle(0)
	h.round(t)
	got = take()
	if len(got) != 1 || got[0].Reason != notify.IdleGPU || got[0].Key != "idle/alice/nb" || !got[0].Resolved || got[0].Namespace != "alice" {
		t.Fatalf("the end of the idle run sent %+v, want one resolved IdleGPU of Key idle/alice/nb", got)
	}
	h.round(t)
	if got := take(); len(got) != 0 {
		t.Errorf("a busy job's round sent %+v", got)
	}
}
