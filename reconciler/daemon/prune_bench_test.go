package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkDaemonPrune10k: gpuctl-reconciler restarted over a repository from which the
// 10,000 Jobs it applied before were removed (issue 32: 10,001 objects pruned in the first
// sync after a restart peaked at 349 MB). The repository keeps its Namespace, so the render
// is not empty, and the daemon runs with --max-prune=100% (startReconciler), so the prune is
// not refused. The restarted daemon's first sync prunes the 10,000 Jobs: its peak RSS (VmHWM of
// the new process, over its start, the sync and 10 s after it, while the watches take in the
// deletions) against issue #18's bar 6, 150 MiB, and how long it took.
func BenchmarkDaemonPrune10k(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchPrune(b, 10000)
	}
}

func benchPrune(b *testing.B, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := b.TempDir()
	bin := buildReconciler(ctx, b, dir)
	const jobsNS, statusNS = "bench-prune", "sys-prune" // Jobs apart from the other benchmarks'
	repo := writeJobsRepo(b, dir, n, jobsNS)
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	store := daemon.NewStore(kube, statusNS)

	start := time.Now()
	first := startReconciler(ctx, b, bin, repo, statusNS, filepath.Join(dir, "log-1"))
	st := waitSync(ctx, b, store, start, 12*time.Minute)
	applied := time.Since(start)
	quiet := settle(b, first.Process.Pid, 0.02, 3*time.Minute)
	_, appliedPeak := memOf(b, first.Process.Pid)
	stopReconciler(first)
	if jobs := countJobs(ctx, b, kube, jobsNS); jobs != n {
		b.Fatalf("after the first run's sync (%s): %d Jobs in %s, want %d", st.Summary, jobs, jobsNS, n)
	}

	// The Jobs' files go; namespace.yaml stays.
	entries, err := os.ReadDir(repo)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "batch-") {
			if err := os.RemoveAll(filepath.Join(repo, e.Name())); err != nil {
				b.Fatal(err)
			}
		}
	}

	restarted := time.Now()
	second := startReconciler(ctx, b, bin, repo, statusNS, filepath.Join(dir, "log-2"))
	defer stopReconciler(second)
	st = waitSync(ctx, b, store, restarted, 10*time.Minute)
	took := time.Since(restarted)
	_, syncPeak := memOf(b, second.Process.Pid)
	time.Sleep(10 * time.Second)
	rss, peak := memOf(b, second.Process.Pid)
	if st.Counts[string(reconciler.ActionDelete)] != n {
		b.Fatalf("the restart's first sync pruned %d, want %d: %s", st.Counts[string(reconciler.ActionDelete)], n, st.Summary)
	}
	if jobs := countJobs(ctx, b, kube, jobsNS); jobs != 0 {
		b.Fatalf("%d Jobs left in %s after the prune (%s)", jobs, jobsNS, st.Summary)
	}
	steps := ""
	if st.Steps != nil {
		steps = "; " + st.Steps.String()
	}
	b.ReportMetric(float64(peak)/1024, "peak-MiB")
	b.ReportMetric(took.Seconds(), "prune-sync-s")
	fmt.Printf("gpuctl-reconciler restarted over %d objects to prune (applied in %s, quiet after %s, that run's peak %d MiB): first sync %s after the start (the sync itself %s%s; %s); RSS peak %d MiB at its end, %d MiB 10 s later (RSS %d MiB) (bar 150 MiB): %s; %.1f KiB per object pruned\n",
		n, applied.Round(time.Second), quiet.Round(time.Second), appliedPeak/1024, took.Round(10*time.Millisecond), st.Duration.Round(10*time.Millisecond), steps, st.Summary,
		syncPeak/1024, peak/1024, rss/1024, passFail(peak <= 150*1024), float64(peak)/float64(n))
}

// countJobs counts gpuctl's Jobs in namespace ns.
func countJobs(ctx context.Context, b *testing.B, kube kubernetes.Interface, ns string) int {
	l, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: keys.ManagedBy + "=" + keys.ManagedByValue})
	if err != nil {
		b.Fatalf("list the Jobs of %s: %v", ns, err)
	}
	return len(l.Items)
}
