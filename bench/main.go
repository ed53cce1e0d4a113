// Command bench compares gpuctl's reconciler with Flux's engine (github.com/fluxcd/pkg/ssa) and
// with `kubectl apply --server-side` on one local cluster (test/testcluster), syncing the
// same rendered training Jobs: a full sync (every object new) and a no-op sync (nothing
// changed), at several N. See README.md.
//
//	cd bench && go run . [-n 100,1000,5000] [-engines gpuctl,flux,kubectl] [-o table|json]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/gpuctl/gpuctl/test/testcluster"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Client-side rate limits of the shared rest.Config that gpuctl and Flux use (client-go's
// defaults, QPS 5 and burst 10, would dominate every timing).
const (
	benchQPS   = 500
	benchBurst = 1000
)

var allEngines = []string{"gpuctl", "flux", "kubectl", "floor"}

type config struct {
	ns          []int
	engines     []string
	output      string
	kubectl     string
	kubectlMaxN int
	profileDir  string
	keepDir     string
	diagnose    bool
	runs        int
	tableFrom   string
	concurrency int // gpuctl's requests in flight; 0: reconciler.DefaultOptions'
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.tableFrom != "" { // print the table of an earlier -o json run
		b, err := os.ReadFile(cfg.tableFrom)
		var r Report
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		r.computeChecks()
		r.writeTable(os.Stdout)
		return
	}
	report, err := run(ctx, cfg)
	if report != nil {
		if cfg.output == "json" {
			if jerr := report.writeJSON(os.Stdout); jerr != nil && err == nil {
				err = jerr
			}
			fmt.Fprintln(os.Stderr)
			report.writeTable(os.Stderr)
		} else {
			fmt.Println()
			report.writeTable(os.Stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	n := fs.String("n", "100,1000,5000", "comma-separated numbers of training Jobs to sync")
	engines := fs.String("engines", strings.Join(allEngines, ","), "comma-separated engines to run: gpuctl, flux, kubectl, floor (bare POSTs: the API server's floor)")
	output := fs.String("o", "table", "output: table, or json on stdout (progress goes to stderr either way; with json the table too)")
	kubectl := fs.String("kubectl", "", "kubectl binary (default: kubectl in the cluster binary directory, built by GPUCTL_WITH_KUBECTL=1 hack/cluster-tools.sh when missing)")
	kubectlMaxN := fs.Int("kubectl-max-n", 0, "run kubectl only for N up to this (0: every N)")
	concurrency := fs.Int("concurrency", 0, "gpuctl's requests in flight within a stage (0: reconciler.DefaultOptions', as gpuctl sync)")
	profileDir := fs.String("profile", "", "write a CPU profile of every gpuctl pass into this directory")
	keepDir := fs.String("cluster-dir", "", "keep the cluster's state and component logs in this directory (default: temporary)")
	diagnose := fs.Bool("diagnose", false, "after gpuctl's passes, break down its no-op list request (untimed): server time, transfer, decode, per encoding")
	runs := fs.Int("runs", 1, "measure each engine's full and no-op sync this many times (deleting its Jobs in between) and report the median run")
	tableFrom := fs.String("table-from", "", "print the table of an earlier -o json output file, and run nothing")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c := &config{output: *output, kubectl: *kubectl, kubectlMaxN: *kubectlMaxN, profileDir: *profileDir, keepDir: *keepDir, diagnose: *diagnose, runs: *runs, tableFrom: *tableFrom, concurrency: *concurrency}
	for _, s := range strings.Split(*n, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-n: %q is not a positive number", s)
		}
		c.ns = append(c.ns, v)
	}
	if c.runs < 1 {
		return nil, errors.New("-runs: at least 1")
	}
	if len(c.ns) == 0 {
		return nil, errors.New("-n: no N given")
	}
	for _, e := range strings.Split(*engines, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if !slices.Contains(allEngines, e) {
			return nil, fmt.Errorf("-engines: unknown engine %q (known: %s)", e, strings.Join(allEngines, ", "))
		}
		if !slices.Contains(c.engines, e) {
			c.engines = append(c.engines, e)
		}
	}
	if len(c.engines) == 0 {
		return nil, errors.New("-engines: no engine given")
	}
	// Keep the canonical order: gpuctl, flux, kubectl, floor.
	slices.SortFunc(c.engines, func(a, b string) int { return slices.Index(allEngines, a) - slices.Index(allEngines, b) })
	if c.output != "table" && c.output != "json" {
		return nil, fmt.Errorf("-o: %q is neither table nor json", c.output)
	}
	return c, nil
}

// progress prints timestamped progress lines to stderr.
type progress struct {
	mu    sync.Mutex
	start time.Time
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// Write lets the cluster's own progress lines through, prefixed.
func (p *progress) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		p.printf("cluster: %s", line)
	}
	return len(b), nil
}

func run(ctx context.Context, cfg *config) (*Report, error) {
	ctrllog.SetLogger(logr.Discard()) // controller-runtime's client logs nothing we need
	log := &progress{start: time.Now()}
	report := &Report{Ns: cfg.ns, Engines: cfg.engines, Started: time.Now(), Gpuctl: gitState()}
	defer func() { report.Seconds = time.Since(report.Started).Seconds() }()

	bin, err := testcluster.Binaries(ctx, log)
	if err != nil {
		return nil, err
	}
	kubectl := ""
	if slices.Contains(cfg.engines, "kubectl") {
		if kubectl, err = findKubectl(ctx, cfg.kubectl, bin, log); err != nil {
			return nil, err
		}
	}
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return nil, err
		}
	}
	workDir, err := os.MkdirTemp("", "gpuctl-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(workDir)

	log.printf("starting the local cluster (%s)", bin)
	cluster, err := testcluster.Start(ctx, testcluster.Options{Log: log, BinDir: bin, Dir: cfg.keepDir})
	if err != nil {
		return nil, err
	}
	defer func() {
		log.printf("stopping the cluster")
		if err := cluster.Stop(); err != nil {
			log.printf("stop: %v", err)
		}
	}()

	// The shared, counted rest.Config of gpuctl and Flux.
	cnt := &counter{}
	shared := cluster.RESTConfig()
	shared.QPS, shared.Burst = benchQPS, benchBurst
	shared.Wrap(cnt.wrap)
	// An uncounted client for setup and checks.
	setupCfg := cluster.RESTConfig()
	setupCfg.QPS, setupCfg.Burst = benchQPS, benchBurst
	kube, err := kubernetes.NewForConfig(setupCfg)
	if err != nil {
		return report, err
	}
	dyn, err := dynamic.NewForConfig(setupCfg)
	if err != nil {
		return report, err
	}

	meter := newCPUMeter()
	idle := idleCores(ctx, meter)
	settleBelow := max(0.25, idle*2+0.1)
	report.Notes = append(report.Notes,
		fmt.Sprintf("one local cluster (test/testcluster: etcd, kube-apiserver, controller-manager, scheduler, kwok) on %d CPUs; idle it used %.2f cores; before every pass the bench waits (untimed) until it uses < %.2f cores, then up to 20 s until the whole machine is that quiet; the column other procs cpu is what processes outside the bench and its cluster used during a pass", numCPU(), idle, settleBelow),
		fmt.Sprintf("gpuctl and Flux share one rest.Config with client QPS %d / burst %d (client-go's 5/10 would dominate); kubectl uses its own client (client-go defaults QPS 5 / burst 10, but its resource builder makes a client per object, so in practice it is not throttled; any throttling it logs is shown in its summary)", benchQPS, benchBurst),
		"every Job has spec.suspend: true, so the Job controller creates no pods; each engine writes into its own namespace bench-<engine>-<N>, created untimed; the render's 3 PriorityClasses are created once, untimed, and left out of the synced objects",
		"gpuctl: reconciler.DefaultOptions() (concurrency 64, prune on; -concurrency changes it), inventory bench-<N>, the same Manager for both passes; floor: bare POSTs of the Jobs with client-go at the fastest of 4/8/16/32/64 in flight (calibrated untimed on 300 Jobs), no plan, no inventory, nothing sent on the no-op; Flux: ssa.ResourceManager concurrency 4, ApplyAllStaged with DefaultApplyOptions, the same ResourceManager and client for both passes; kubectl: one process per pass on one multi-document file, -v=6 to count its requests",
	)
	if cfg.runs > 1 {
		report.Notes = append(report.Notes, fmt.Sprintf("every figure is the run of median duration of %d runs per engine and N (each run: delete the engine's Jobs, untimed; full sync; no-op sync; runs interleaved across engines); -o json has every run", cfg.runs))
	}
	log.printf("cluster idle at %.2f cores; settling threshold %.2f cores", idle, settleBelow)

	if err := warmUp(ctx, kube, dyn, kubectl, cluster.Kubeconfig, workDir); err != nil {
		return report, fmt.Errorf("warm-up: %w", err)
	}

	var errs []error
	for _, n := range cfg.ns {
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		w, err := renderWorkload(n)
		if err != nil {
			return report, err
		}
		log.printf("N=%d: generated %d training files and rendered them in %s: %d Jobs (suspended), %d PriorityClasses set aside%s",
			n, n, round(time.Since(t0)), len(w.jobs), len(w.shared), dropNote(w.dropped))
		if err := createShared(ctx, dyn, w.shared); err != nil {
			return report, err
		}
		for _, e := range cfg.engines {
			if e == "kubectl" && cfg.kubectlMaxN > 0 && n > cfg.kubectlMaxN {
				continue
			}
			if err := createNamespace(ctx, kube, nsName(e, n)); err != nil {
				return report, err
			}
		}
		// One entry per engine; runs are interleaved (every engine's run 1, then every
		// engine's run 2, ...) so that a burst of load elsewhere on the machine does not
		// fall on one engine's runs only.
		type entry struct {
			eng  engine
			res  *Result
			objs []*unstructured.Unstructured
			ns   string
		}
		var entries []*entry
		for _, e := range cfg.engines {
			if e == "kubectl" && cfg.kubectlMaxN > 0 && n > cfg.kubectlMaxN {
				log.printf("N=%d kubectl: skipped (-kubectl-max-n %d)", n, cfg.kubectlMaxN)
				continue
			}
			ns := nsName(e, n)
			var eng engine
			switch e {
			case "gpuctl":
				eng = &gpuctlEngine{cfg: shared, inventory: fmt.Sprintf("bench-%d", n), profileDir: cfg.profileDir, n: n, concurrency: cfg.concurrency}
			case "flux":
				eng = &fluxEngine{cfg: shared}
			case "floor":
				eng = &floorEngine{cfg: shared, log: log}
			case "kubectl":
				eng = &kubectlEngine{bin: kubectl, kubeconfig: cluster.Kubeconfig, cacheDir: filepath.Join(workDir, "kube-cache"), workDir: workDir, n: n}
			}
			en := &entry{eng: eng, res: &Result{N: n, Engine: e}, objs: copyInto(w.jobs, ns), ns: ns}
			report.Results = append(report.Results, en.res)
			if err := eng.setup(ctx, en.objs); err != nil {
				en.res.Error = "setup: " + err.Error()
				errs = append(errs, fmt.Errorf("N=%d %s: setup: %w", n, e, err))
				continue
			}
			entries = append(entries, en)
		}
		for run := 1; run <= cfg.runs && ctx.Err() == nil; run++ {
			for _, en := range entries {
				if en.res.Error != "" || ctx.Err() != nil {
					continue
				}
				if err := measureRun(ctx, log, meter, settleBelow, cnt, kube, en.eng, en.res, en.objs, en.ns, run, cfg.runs); err != nil {
					en.res.Error = err.Error()
					errs = append(errs, fmt.Errorf("N=%d %s: %w", n, en.res.Engine, err))
					log.printf("N=%d %s: ERROR: %v", n, en.res.Engine, err)
				}
			}
		}
		for _, en := range entries {
			res := en.res
			if res.Error != "" || len(res.FullRuns) < cfg.runs || len(res.NoOpRuns) < cfg.runs {
				continue
			}
			res.Full, res.NoOp = median(res.FullRuns), median(res.NoOpRuns)
			if cfg.runs > 1 {
				log.printf("N=%d %s: median of %d runs: full %s (runs %s), no-op %s (runs %s)", n, res.Engine, cfg.runs,
					fmtSecs(res.Full.Seconds), runList(res.FullRuns), fmtSecs(res.NoOp.Seconds), runList(res.NoOpRuns))
			}
			logWriters(ctx, log, kube, res, en.ns, en.objs[0].GetName())
			if res.Engine == "gpuctl" && cfg.diagnose {
				d, err := diagnoseList(ctx, kube, en.ns)
				if err != nil {
					errs = append(errs, fmt.Errorf("N=%d diagnose: %w", n, err))
					log.printf("N=%d diagnose: ERROR: %v", n, err)
					continue
				}
				res.ListDiagnosis = d
				for _, v := range d.Variants {
					log.printf("N=%d gpuctl list diagnosis: %s: %s (%.1f MB; headers %s, body %s, decode %s)",
						n, v.Name, round(v.total()), float64(v.Bytes)/1e6, round(v.Headers), round(v.Body), round(v.Decode))
				}
			}
		}
		report.computeChecks()
		for _, c := range report.Checks {
			if c.N == n {
				log.printf("N=%d: %s", n, c.Text)
			}
		}
	}
	report.computeChecks()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return report, errors.Join(errs...)
}

// measureRun runs one full and one no-op pass of one engine. Before every run but the first
// it deletes the engine's Jobs (untimed), so that the full sync creates them all again.
func measureRun(ctx context.Context, log *progress, meter *cpuMeter, settleBelow float64, cnt *counter,
	kube kubernetes.Interface, eng engine, res *Result, objs []*unstructured.Unstructured, ns string, run, runs int) error {
	if run > 1 {
		if err := deleteJobs(ctx, kube, ns); err != nil {
			return fmt.Errorf("delete the Jobs of run %d: %w", run-1, err)
		}
	}
	for _, label := range []string{"full", "noop"} {
		settled, ok := meter.settle(ctx, settleBelow, 3*time.Minute)
		if !ok {
			log.printf("N=%d %s: the cluster did not go idle in %s; measuring anyway", res.N, res.Engine, round(settled))
		}
		if err := eng.before(); err != nil {
			return err
		}
		of := ""
		if runs > 1 {
			of = fmt.Sprintf(" (run %d of %d)", run, runs)
		}
		log.printf("N=%d %s: %s sync%s of %d Jobs into %s (settled %s)...", res.N, res.Engine, passName(label), of, len(objs), ns, round(settled))
		p, err := timed(ctx, log, meter, cnt, eng, res, label)
		if err != nil {
			return fmt.Errorf("%s sync: %w", passName(label), err)
		}
		p.SettleSeconds = settled.Seconds()
		received := ""
		if p.Bytes > 0 {
			received = fmt.Sprintf(", %.1f MB received", float64(p.Bytes)/1e6)
		}
		log.printf("N=%d %s: %s sync %s: %s; %d requests (%d writes, %d dry-runs, %d reads%s); apiserver+etcd %.1f CPU s, client %.1f CPU s%s",
			res.N, res.Engine, passName(label), fmtSecs(p.Seconds), p.Summary, p.Requests, p.Writes, p.DryRuns, p.Reads, received, p.ServerCPU, p.ClientCPU, otherNote(p))
		for _, r := range p.RequestLog {
			log.printf("N=%d %s:     %s", res.N, res.Engine, r)
		}
		if label == "full" {
			res.FullRuns = append(res.FullRuns, p)
			jobs, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(jobs.Items) != len(objs) {
				return fmt.Errorf("after the full sync %s holds %d Jobs, want %d", ns, len(jobs.Items), len(objs))
			}
		} else {
			res.NoOpRuns = append(res.NoOpRuns, p)
		}
	}
	return nil
}

// logWriters prints which field managers wrote one of the engine's Jobs: the engine, and the
// Job controller's status update.
func logWriters(ctx context.Context, log *progress, kube kubernetes.Interface, res *Result, ns, name string) {
	j, err := kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	var writers []string
	for _, mf := range j.ManagedFields {
		w := fmt.Sprintf("%s (%s", mf.Manager, mf.Operation)
		if mf.Subresource != "" {
			w += " " + mf.Subresource
		}
		writers = append(writers, w+")")
	}
	log.printf("N=%d %s: %s/%s is written by: %s", res.N, res.Engine, ns, j.Name, strings.Join(writers, ", "))
}

// median returns the pass of median duration (the lower middle one of an even count).
func median(ps []*Pass) *Pass {
	if len(ps) == 0 {
		return nil
	}
	s := slices.Clone(ps)
	slices.SortFunc(s, func(a, b *Pass) int {
		switch {
		case a.Seconds < b.Seconds:
			return -1
		case a.Seconds > b.Seconds:
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}

func runList(ps []*Pass) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmtSecs(p.Seconds)
	}
	return strings.Join(parts, ", ")
}

// deleteJobs deletes every Job of ns and waits until they are gone.
func deleteJobs(ctx context.Context, kube kubernetes.Interface, ns string) error {
	bg := metav1.DeletePropagationBackground
	if err := kube.BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{}); err != nil {
		return err
	}
	for {
		l, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// otherNote warns when other processes on the machine took a noticeable share of the CPU
// during a pass.
func otherNote(p *Pass) string {
	if p.Seconds <= 0 || p.OtherCPU/p.Seconds < 0.2 {
		return ""
	}
	return fmt.Sprintf("; WARNING: other processes on the machine used %.1f cores meanwhile", p.OtherCPU/p.Seconds)
}

func passName(label string) string {
	if label == "noop" {
		return "no-op"
	}
	return label
}

// timed runs one pass and measures wall time, requests and CPU, printing progress every 10 s.
func timed(ctx context.Context, log *progress, meter *cpuMeter, cnt *counter, eng engine, res *Result, label string) (*Pass, error) {
	before := cnt.snapshot()
	srv0, cl0, m0 := meter.server(), meter.cluster(), machineBusy()
	self0, child0 := processCPU()
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s := eng.progress()
				if s == "" {
					s = fmt.Sprintf("%d requests so far", cnt.snapshot().minus(before).Requests)
				}
				log.printf("N=%d %s: ... %s sync running for %s, %s", res.N, res.Engine, passName(label), time.Since(start).Round(time.Second), s)
			}
		}
	}()
	summary, own, err := eng.pass(ctx, label)
	elapsed := time.Since(start)
	close(done)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	self1, child1 := processCPU()
	p := &Pass{Seconds: elapsed.Seconds(), Counts: cnt.snapshot().minus(before), ServerCPU: meter.server() - srv0,
		ClientCPU: self1 - self0, Summary: summary}
	if g, ok := eng.(*gpuctlEngine); ok {
		p.PlanSeconds = g.planned.Seconds()
	}
	if m0 > 0 {
		ours := (meter.cluster() - cl0) + (self1 - self0) + (child1 - child0)
		p.OtherCPU = max(0, machineBusy()-m0-ours)
	}
	if p.Requests <= 16 {
		p.RequestLog = cnt.recentSince(before.Requests)
	}
	if own != nil {
		p.RequestLog = nil
		p.Counts = *own
		p.ClientCPU = child1 - child0
	}
	return p, nil
}

func nsName(engine string, n int) string { return fmt.Sprintf("bench-%s-%d", engine, n) }

func dropNote(dropped map[string]int) string {
	if len(dropped) == 0 {
		return ""
	}
	var parts []string
	for k, v := range dropped {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	return "; dropped " + strings.Join(parts, ", ")
}

func createNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createShared creates the cluster-scoped objects the render added (the PriorityClasses the
// Jobs name), once, outside every engine.
func createShared(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Kind != "PriorityClass" {
			continue
		}
		gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: "priorityclasses"}
		_, err := dyn.Resource(gvr).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "bench-setup", Force: true})
		if err != nil {
			return fmt.Errorf("create %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// warmUp touches the code paths every engine needs once, untimed: a server-side apply of a
// Job (the API server builds its apply machinery for the type) and kubectl's discovery cache.
func warmUp(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, kubectl, kubeconfig, workDir string) error {
	if err := createNamespace(ctx, kube, "bench-warmup"); err != nil {
		return err
	}
	w, err := renderWorkload(1)
	if err != nil {
		return err
	}
	job := copyInto(w.jobs, "bench-warmup")[0]
	gvr := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	if _, err := dyn.Resource(gvr).Namespace("bench-warmup").Apply(ctx, job.GetName(), job,
		metav1.ApplyOptions{FieldManager: "bench-setup", Force: true}); err != nil {
		return err
	}
	if kubectl != "" {
		cmd := exec.CommandContext(ctx, kubectl, "api-resources", "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(workDir, "kube-cache"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("kubectl api-resources: %w: %s", err, out)
		}
	}
	return nil
}

// idleCores measures what the idle cluster uses, over 3 s.
func idleCores(ctx context.Context, m *cpuMeter) float64 {
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second): // let the freshly started components calm down
	}
	a := m.cluster()
	select {
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
	}
	return (m.cluster() - a) / 3
}

// findKubectl returns the kubectl to compare with: the one given, or kubectl in the cluster
// binary directory, built there by hack/cluster-tools.sh when missing (or waited for when a
// build is already writing it).
func findKubectl(ctx context.Context, given, binDir string, log *progress) (string, error) {
	if given != "" {
		return given, nil
	}
	path := filepath.Join(binDir, "kubectl")
	if isExecutable(path) {
		return path, nil
	}
	if _, err := os.Stat(path + ".tmp"); err == nil {
		log.printf("kubectl is being built into %s by another process; waiting for it", binDir)
		for !isExecutable(path) {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(5 * time.Second):
			}
		}
		return path, nil
	}
	root, err := testcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	log.printf("building kubectl (first run only): GPUCTL_WITH_KUBECTL=1 hack/cluster-tools.sh")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "cluster-tools.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GPUCTL_WITH_KUBECTL=1")
	cmd.Stdout, cmd.Stderr = io.Discard, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build kubectl: %w", err)
	}
	if !isExecutable(path) {
		return "", fmt.Errorf("hack/cluster-tools.sh built no %s", path)
	}
	return path, nil
}

// gitState describes the gpuctl checkout that the bench measures (replace => ../): its commit
// and whether its working tree has changes; "" without git.
func gitState() string {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return ""
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	state := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		state += "+changes"
	}
	return state
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func numCPU() int { return runtime.NumCPU() }
