package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// engine is one way of syncing the objects. setup and before run untimed; pass is timed.
type engine interface {
	// setup prepares the engine for a run of objects (all in one namespace).
	setup(ctx context.Context, objs []*unstructured.Unstructured) error
	// before prepares one pass (untimed): e.g. fresh copies of the objects.
	before() error
	// pass syncs the objects once. It returns a summary of what the engine says it did and,
	// for engines that do not go through the counted rest.Config, their own request counts.
	pass(ctx context.Context, label string) (summary string, own *Counts, err error)
	// progress describes the pass in flight, for the periodic progress line.
	progress() string
}

// actionSummary formats counts by action: "1000 create" or "3 create, 997 unchanged".
func actionSummary(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", counts[k], k)
	}
	return strings.Join(parts, ", ")
}

// --- gpuctl ---

// gpuctlEngine is gpuctl's reconciler: Plan, then Apply, with the options of `gpuctl sync`
// (concurrency 64, prune on) and one inventory per N. The same Manager serves both passes, as
// in the daemon, so the no-op pass reuses the discovery that the full pass loaded.
type gpuctlEngine struct {
	cfg         *rest.Config
	inventory   string
	profileDir  string
	n           int
	concurrency int // 0: the default

	m       *reconciler.Manager
	objs    []*unstructured.Unstructured
	planned time.Duration // the Plan of the last pass
	done    func() int
}

func (e *gpuctlEngine) setup(_ context.Context, objs []*unstructured.Unstructured) error {
	opts := reconciler.DefaultOptions()
	opts.InventoryName = e.inventory
	if e.concurrency > 0 {
		opts.Concurrency = e.concurrency
	}
	m, err := reconciler.NewManager(e.cfg, opts)
	if err != nil {
		return err
	}
	e.m, e.objs = m, objs
	return nil
}

func (e *gpuctlEngine) before() error { return nil }

func (e *gpuctlEngine) pass(ctx context.Context, label string) (string, *Counts, error) {
	if e.profileDir != "" {
		f, err := os.Create(filepath.Join(e.profileDir, fmt.Sprintf("gpuctl-%s-%d.pprof", label, e.n)))
		if err != nil {
			return "", nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return "", nil, err
		}
		defer pprof.StopCPUProfile()
	}
	t0 := time.Now()
	plan, err := e.m.Plan(ctx, e.objs)
	if err != nil {
		return "", nil, fmt.Errorf("plan: %w", err)
	}
	planned := time.Since(t0)
	e.planned = planned
	counts := map[string]int{}
	for _, c := range plan.Changes {
		counts[string(c.Action)]++
	}
	cs, err := e.m.Apply(ctx, plan, nil)
	if err != nil {
		return "", nil, fmt.Errorf("apply: %w", err)
	}
	return fmt.Sprintf("%s (plan %s, apply %s)", actionSummary(counts), round(planned), round(cs.Duration)), nil, nil
}

func (e *gpuctlEngine) progress() string { return "" }

// --- Flux ---

// fluxEngine is Flux's engine, github.com/fluxcd/pkg/ssa, as kustomize-controller drives it:
// a ResourceManager with concurrency 4 (kustomize-controller's --concurrent-ssa default) over
// a controller-runtime client without cache, ApplyAllStaged with the default apply options.
// The same ResourceManager (and client, with its REST mapper) serves both passes.
type fluxEngine struct {
	cfg  *rest.Config
	rm   *ssa.ResourceManager
	src  []*unstructured.Unstructured
	objs []*unstructured.Unstructured
}

func (e *fluxEngine) setup(_ context.Context, objs []*unstructured.Unstructured) error {
	c, err := client.New(e.cfg, client.Options{})
	if err != nil {
		return err
	}
	e.rm = ssa.NewResourceManager(c, nil, ssa.Owner{Field: "flux-bench", Group: "bench.gpuctl.dev"})
	e.rm.SetConcurrency(4)
	e.src = objs
	return nil
}

// before gives each pass fresh copies with Flux's owner labels, as kustomize-controller builds
// its objects afresh on every reconciliation (ApplyAll sorts and the client rewrites them).
func (e *fluxEngine) before() error {
	e.objs = copyInto(e.src, e.src[0].GetNamespace())
	e.rm.SetOwnerLabels(e.objs, "bench", "flux-system")
	return nil
}

func (e *fluxEngine) pass(ctx context.Context, _ string) (string, *Counts, error) {
	cs, err := e.rm.ApplyAllStaged(ctx, e.objs, ssa.DefaultApplyOptions())
	if err != nil {
		return "", nil, err
	}
	counts := map[string]int{}
	for _, en := range cs.Entries {
		counts[string(en.Action)]++
	}
	return actionSummary(counts), nil, nil
}

func (e *fluxEngine) progress() string { return "" }

// --- kubectl ---

// kubectlEngine runs `kubectl apply --server-side` on one multi-document YAML file of the
// objects, as a user or a CI job would, with -v=6 so that its requests can be counted from
// its log. Its client is kubectl's own: client-go's defaults (QPS 5, burst 10), but kubectl's
// resource builder makes a REST client, with a fresh rate limiter, per object, so one apply of
// many objects is not throttled in practice.
type kubectlEngine struct {
	bin, kubeconfig, cacheDir, workDir string
	n                                  int

	file, out, log string
}

func (e *kubectlEngine) setup(_ context.Context, objs []*unstructured.Unstructured) error {
	b, err := render.MarshalYAML(objs)
	if err != nil {
		return err
	}
	e.file = filepath.Join(e.workDir, fmt.Sprintf("kubectl-%d.yaml", e.n))
	return os.WriteFile(e.file, b, 0o644)
}

func (e *kubectlEngine) before() error { return nil }

func (e *kubectlEngine) pass(ctx context.Context, label string) (string, *Counts, error) {
	e.out = filepath.Join(e.workDir, fmt.Sprintf("kubectl-%s-%d.out", label, e.n))
	e.log = filepath.Join(e.workDir, fmt.Sprintf("kubectl-%s-%d.log", label, e.n))
	stdout, err := os.Create(e.out)
	if err != nil {
		return "", nil, err
	}
	defer stdout.Close()
	stderr, err := os.Create(e.log)
	if err != nil {
		return "", nil, err
	}
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, e.bin, "apply", "--server-side", "--field-manager=kubectl-bench",
		"-f", e.file, "--kubeconfig", e.kubeconfig, "--cache-dir", e.cacheDir, "-v=6")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("kubectl apply: %w; see %s", err, e.log)
	}
	out, _ := os.ReadFile(e.out)
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			counts[f[1]]++
		}
	}
	c, throttled, waited := parseKubectlLog(e.log)
	s := actionSummary(counts)
	if throttled > 0 {
		s += fmt.Sprintf("; client-side throttling logged %d times, %s waited", throttled, round(waited))
	}
	return s, &c, nil
}

func (e *kubectlEngine) progress() string {
	b, err := os.ReadFile(e.out)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d of %d applied", bytes.Count(b, []byte("\n")), e.n)
}

var (
	responseRE = regexp.MustCompile(`"Response" verb="([A-Z]+)" url="([^"]*)"`)
	waitedRE   = regexp.MustCompile(`Waited for ([0-9.]+[mµn]?s) due to client-side throttling`)
)

// parseKubectlLog counts kubectl's requests from its -v=6 log ("Response" verb=... url=...)
// and the client-side throttling it reports.
func parseKubectlLog(path string) (c Counts, throttled int, waited time.Duration) {
	f, err := os.Open(path)
	if err != nil {
		return c, 0, 0
	}
	defer f.Close()
	var cnt counter
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := responseRE.FindStringSubmatch(line); m != nil {
			q := ""
			if i := strings.IndexByte(m[2], '?'); i >= 0 {
				q = m[2][i+1:]
			}
			cnt.count(m[1], q)
		}
		if m := waitedRE.FindStringSubmatch(line); m != nil {
			throttled++
			if d, err := time.ParseDuration(m[1]); err == nil {
				waited += d
			}
		}
	}
	return cnt.snapshot(), throttled, waited
}
