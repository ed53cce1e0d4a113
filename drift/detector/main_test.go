package detector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/sources/local"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{})) }

// uniq tells apart the namespaces of repeated runs (go test -count=N) on one cluster.
func uniq() string { return strconv.FormatInt(time.Now().UnixNano()%1e7, 36) }

// harness runs a daemon with a drift detector over a directory, in a system namespace of its
// own, as gpuctl-reconciler wires them.
type harness struct {
	t       testing.TB
	ctx     context.Context
	dir     string
	ns      string
	kube    kubernetes.Interface
	d       *daemon.Daemon
	det     *detector.Detector
	store   *drift.Store
	status  *daemon.Store
	metrics *daemon.Metrics
	engine  *reconciler.Manager
}

func newHarness(t testing.TB, name string, opts detector.Options, files map[string]string, namespaces ...string) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a soak runs 10 minutes
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, dir: t.TempDir(), ns: "sys-" + name}
	for f, c := range files {
		h.write(f, c)
	}
	cfg := testcluster.Current().RESTConfig()
	h.kube = kubernetes.NewForConfigOrDie(cfg)
	// The namespaces an admin creates: the pool registry's and the teams'.
	for _, ns := range append([]string{keys.SystemNamespace}, namespaces...) {
		if err := daemon.EnsureNamespace(ctx, h.kube, ns); err != nil {
			t.Fatal(err)
		}
	}
	eopts := reconciler.DefaultOptions()
	eopts.Namespace, eopts.MaxPrune, eopts.Force = h.ns, 1, opts.Mode == drift.ModeCorrect
	engine, err := reconciler.NewManager(cfg, eopts)
	if err != nil {
		t.Fatal(err)
	}
	src, err := local.New(local.Options{Root: h.dir, Debounce: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	h.metrics = daemon.NewMetrics(prometheus.NewRegistry())
	h.store = drift.NewStore(h.kube, h.ns)
	events := record.NewBroadcaster()
	t.Cleanup(events.Shutdown)
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: h.kube.CoreV1().Events("")})
	opts.Config, opts.Kube, opts.Engine, opts.Store, opts.Metrics = cfg, h.kube, engine, h.store, h.metrics.Drift
	opts.Events = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "gpuctl-reconciler"})
	if h.det, err = detector.New(opts); err != nil {
		t.Fatal(err)
	}
	engine.SetWatched(h.det)
	h.status = daemon.NewStore(h.kube, h.ns)
	h.engine = engine
	h.d = daemon.New(daemon.Options{Source: src, Engine: engine, Store: h.status, Interval: time.Hour,
		MinBackoff: 100 * time.Millisecond, Identity: name, Render: render.Options{}, DriftMode: opts.Mode,
		Drift: h.det, DriftStore: h.store})
	done := make(chan struct{})
	go func() { defer close(done); _ = h.d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h.waitStatus("first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	h.waitReport("first report", func(drift.Report) bool { return true })
	return h
}

func (h *harness) write(name, content string) {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) waitStatus(what string, ok func(daemon.Status) bool) daemon.Status {
	h.t.Helper()
	var st daemon.Status
	h.poll(what, func() (bool, string) {
		var err error
		st, _, err = h.status.Read(h.ctx)
		return err == nil && ok(st), fmt.Sprintf("status %+v, err %v", st, err)
	})
	return st
}

// waitReport waits until the detector's report satisfies ok, and returns it with how long
// it took.
func (h *harness) waitReport(what string, ok func(drift.Report) bool) (drift.Report, time.Duration) {
	h.t.Helper()
	start := time.Now()
	var r drift.Report
	h.poll(what, func() (bool, string) {
		var found bool
		r, _, found = h.det.Current()
		return found && ok(r), "report: " + r.Summary() + " " + itemsOf(r)
	})
	return r, time.Since(start)
}

func (h *harness) poll(what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(pollFor)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; %s", what, state)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func itemsOf(r drift.Report) string {
	var s []string
	for _, it := range r.Items {
		s = append(s, fmt.Sprintf("[%s %s by %q: %s]", it.Category, it.Object, it.Manager, it.Message))
	}
	return strings.Join(s, " ")
}

// item returns the report's item of a category and object name, or nil.
func item(r drift.Report, c drift.Category, kind, name string) *drift.Item {
	for i := range r.Items {
		it := &r.Items[i]
		if it.Category == c && it.Object.Kind == kind && it.Object.Name == name {
			return it
		}
	}
	return nil
}

func has(c drift.Category, kind, name string) func(drift.Report) bool {
	return func(r drift.Report) bool { return item(r, c, kind, name) != nil }
}

func hasNot(c drift.Category, kind, name string) func(drift.Report) bool {
	return func(r drift.Report) bool { return item(r, c, kind, name) == nil }
}

// edit changes an object the way `kubectl edit` does: a patch under field manager kubectl-edit.
func (h *harness) edit(resource, ns, name, patch string) {
	h.t.Helper()
	var err error
	opts := metav1.PatchOptions{FieldManager: "kubectl-edit"}
	pt := types.MergePatchType
	switch resource {
	case "deployments":
		_, err = h.kube.AppsV1().Deployments(ns).Patch(h.ctx, name, pt, []byte(patch), opts)
	case "jobs":
		_, err = h.kube.BatchV1().Jobs(ns).Patch(h.ctx, name, pt, []byte(patch), opts)
	case "resourcequotas":
		_, err = h.kube.CoreV1().ResourceQuotas(ns).Patch(h.ctx, name, pt, []byte(patch), opts)
	case "nodes":
		opts.FieldManager = "kubectl-label"
		_, err = h.kube.CoreV1().Nodes().Patch(h.ctx, name, pt, []byte(patch), opts)
	default:
		h.t.Fatalf("edit: unknown resource %s", resource)
	}
	if err != nil {
		h.t.Fatalf("edit %s %s/%s: %v", resource, ns, name, err)
	}
}

// unlabel removes the pool label from nodes when the test ends: the cluster is shared by the
// package's tests.
func (h *harness) unlabel(nodes ...string) {
	h.t.Cleanup(func() {
		for _, n := range nodes {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, keys.Pool)
			_, _ = h.kube.CoreV1().Nodes().Patch(context.Background(), n, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
	})
}

// files are one team's gpuctl files: a GPU training job, a service, a quota, a pool.
func files(ns, pool, node string) map[string]string {
	return map[string]string{
		"train.yaml": "kind: training\nversion: v0.1\njob: {name: train, namespace: " + ns + "}\nenvironment: {image: x, command: [sleep, '1']}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\n",
		"web.yaml":   "kind: compute\nversion: v0.1\njob: {name: web, namespace: " + ns + "}\nenvironment: {image: nginx}\nservice: {replicas: 1}\n",
		"quota.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: team}\nusers:\n  " + ns + ": {gpu: 8, cpu: 32, memory: 64Gi}\n",
		"pool.yaml":  "kind: pool\nversion: v0.1\nmetadata: {name: " + pool + "}\nnodes:\n  " + node + ": {}\n",
	}
}

// pollFor is how long poll waits.
var pollFor = 30 * time.Second
