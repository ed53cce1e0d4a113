package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/sources"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// crashFiles are the files of a revision over namespace ns: the Namespace, a ConfigMap whose
// data is setting, Jobs 0 and 1, and extra Jobs numbered from 100.
func crashFiles(ns, setting string, extra int) map[string]string {
	files := map[string]string{
		"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n",
		"settings.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: " + ns + "}\ndata: {setting: " + setting + "}\n",
	}
	for _, j := range append([]int{0, 1}, rangeFrom(100, extra)...) {
		files[fmt.Sprintf("job-%05d.yaml", j)] = clusterfixture.JobManifest(ns, j, "")
	}
	return files
}

// rangeFrom is the n integers from first.
func rangeFrom(first, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// gatedSource is a source whose changes the test signals (changes), so that a sync reads a
// revision whose files are all written.
type gatedSource struct {
	sources.Source
	changes chan struct{}
}

func (g gatedSource) Changes() <-chan struct{} { return g.changes }

// crashDuringApply applies R1 (the Namespace, the ConfigMap "r1" and Jobs 0 and 1) with a
// daemon, then R2 (the ConfigMap "r2", and 40 more Jobs); the daemon dies, as if SIGKILLed,
// just before its killAt-th write of a Job: its context ends there, and no status is written
// after that point. The writes go one at a time, so that exactly killAt-1 Jobs of R2 exist.
// It returns R1's applied revision and the status the dead daemon left.
func crashDuringApply(t *testing.T, name, ns string, killAt int64) (string, daemon.Status) {
	t.Helper()
	r1 := crashFiles(ns, "r1", 0)
	changes := make(chan struct{}, 1)
	var armed atomic.Bool
	var jobWrites atomic.Int64
	runCtx, kill := context.WithCancel(context.Background())
	defer kill()
	kills := func(r *http.Request) bool { // a write of a Job, not a dry run, once armed
		if armed.Load() && r.Method != http.MethodGet && r.URL.Query().Get("dryRun") == "" &&
			strings.Contains(r.URL.Path, "/namespaces/"+ns+"/jobs") && jobWrites.Add(1) == killAt {
			kill() // this write and every later one fail, as after a SIGKILL
		}
		return false
	}
	a := newHarness(t, name, r1, func(o *daemon.Options) {
		cfg := rest.CopyConfig(testcluster.Current().RESTConfig())
		cfg.Wrap(testcluster.CountRequests(new(atomic.Int64), kills))
		opts := reconciler.DefaultOptions()
		opts.Namespace, opts.MaxPrune, opts.Concurrency = "sys-"+name, 1, 1
		engine, err := reconciler.NewManager(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		o.Engine, o.Source = engine, gatedSource{o.Source, changes}
	})
	ran := make(chan struct{})
	go func() { defer close(ran); _ = a.d.Run(runCtx) }()
	first := a.waitStatus("R1 applied", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	armed.Store(true)
	for f, c := range crashFiles(ns, "r2", 40) {
		a.write(f, c)
	}
	changes <- struct{}{}
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatalf("the daemon was not killed within a minute: %d writes of Jobs", jobWrites.Load())
	}
	st, _, err := a.store.Read(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return first.AppliedRevision, st
}

// jobsIn lists the names of the Jobs in ns.
func jobsIn(t *testing.T, h *harness, ns string) []string {
	t.Helper()
	list, err := h.kube.BatchV1().Jobs(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	return names
}

// afterRestart starts a new daemon over R1 (the tree went back) and returns the status of its
// first sync.
func afterRestart(t *testing.T, name, ns string) (*harness, daemon.Status) {
	t.Helper()
	b := newHarness(t, name, crashFiles(ns, "r1", 0))
	started := time.Now()
	b.start()
	st := b.waitStatus("the restarted daemon's first sync", func(s daemon.Status) bool {
		return s.LastAttempt.After(started) && s.Result != daemon.ResultPending
	})
	return b, st
}

// TestCrashMidApplyThenRevertPrunes (issue 32, finding 1): a daemon killed while it creates the
// Jobs of R2, after 9 of them, then the tree back at R1. The status records the apply that
// had begun; the restarted daemon's first sync prunes the 9 Jobs that nothing desires and
// says so. Before, the status still said R1 was applied, the restarted daemon's report mode
// trusted it ("drift is reported, not corrected") and no interval sync ever pruned them.
func TestCrashMidApplyThenRevertPrunes(t *testing.T) {
	const name, ns = "crash-prune", "crash-prune-jobs"
	r1, dead := crashDuringApply(t, name, ns, 10)
	if dead.Applying == nil || dead.Applying.Revision == r1 || dead.AppliedRevision != r1 || dead.Result != daemon.ResultSucceeded {
		t.Errorf("the killed daemon's status: applied %s, result %s, applying %v; want R1 applied, and R2's apply recorded",
			dead.AppliedRevision, dead.Result, dead.Applying)
	}
	b, st := afterRestart(t, name, ns)
	if got := jobsIn(t, b, ns); len(got) != 2 {
		t.Errorf("Jobs after the restart: %q, want the 2 of R1 (the 9 that the killed sync created pruned)", got)
	}
	if st.Result != daemon.ResultSucceeded || st.Counts["delete"] != 9 || st.Applying != nil ||
		strings.Contains(st.Message, "drift") || !strings.Contains(st.Message, "had not ended") {
		t.Fatalf("the restarted daemon's status: %s: %s (%s; counts %v, applying %v); want R1 applied in full, 9 pruned",
			st.Result, st.Message, st.Summary, st.Counts, st.Applying)
	}
}

// TestCrashMidApplyThenRevertRestores (issue 32, finding 1): a daemon killed at the first Job
// of R2, after R2's ConfigMap was updated (configuration goes before workloads), then the tree
// back at R1: nothing is left to prune, but the ConfigMap holds R2's data. The restarted
// daemon does not take it for drift (its status recorded the apply that had begun): its first
// sync puts R1's data back.
func TestCrashMidApplyThenRevertRestores(t *testing.T) {
	const name, ns = "crash-restore", "crash-restore-jobs"
	setting := func(h *harness) string {
		cm, err := h.kube.CoreV1().ConfigMaps(ns).Get(h.ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["setting"]
	}
	_, dead := crashDuringApply(t, name, ns, 1)
	if dead.Applying == nil {
		t.Errorf("the killed daemon's status records no apply: %s: %s", dead.Result, dead.Message)
	}
	b, st := afterRestart(t, name, ns)
	if got := jobsIn(t, b, ns); len(got) != 2 {
		t.Fatalf("Jobs: %q, want the 2 of R1 (the daemon was killed at the first Job of R2)", got)
	}
	if got := setting(b); got != "r1" || st.Result != daemon.ResultSucceeded || st.Counts["update"] != 1 || strings.Contains(st.Message, "drift") {
		t.Fatalf("after the restart the ConfigMap holds %q, want r1; status %s: %s (%s)", got, st.Result, st.Message, st.Summary)
	}
}
