package daemon_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/sources/local"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// BenchmarkEditFetchRender10k is the daemon's read of a one-file edit in a directory of 10,000
// Job manifests (BenchmarkDaemonRSS10k's repository), in process and without a cluster: the
// directory source's fetch, then the render with the render cache and the source's digests,
// as the daemon wires them. It prints the p50 of each over b.N edits (issue #18, bar 2).
// GPUCTL_BENCH_CPUPROFILE=file profiles the edits alone (not the set-up).
func BenchmarkEditFetchRender10k(b *testing.B) {
	benchEditFetchRender(b, writeJobsRepo(b, b.TempDir(), 10000, "default"), func(j, i int) (string, string) {
		return filepath.Join(fmt.Sprintf("batch-%03d", j/100), fmt.Sprintf("job-%05d.yaml", j)), clusterfixture.JobManifest("default", j, strconv.Itoa(i))
	})
}

// BenchmarkEditFetchRender10kGpuctl is BenchmarkEditFetchRender10k over 10,000 gpuctl training
// files in 20 team directories (each rendered to a Job and its Service).
func BenchmarkEditFetchRender10kGpuctl(b *testing.B) {
	repo := filepath.Join(b.TempDir(), "repo")
	write := func(rel, content string) {
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(".gpuctl.yaml", "namespaces: [{path: teams/*/**, namespace: $1}]\n")
	file := func(j, i int) (string, string) {
		return fmt.Sprintf("teams/team-%02d/job-%05d.yaml", j%20, j), fmt.Sprintf(`kind: training
version: v0.1
job: {name: job-%05d, priority: high, description: "sweep %d"}
environment:
  image: registry.example.com/llama-factory:v0.8.0
  command: [llamafactory-cli, train, --stage, sft, --seed, "%d"]
resources: {pool: training-pool, gpu: 1, cpu: 8, memory: 64Gi}
`, j, i, j)
	}
	for j := range 10000 {
		write(file(j, 0))
	}
	benchEditFetchRender(b, repo, file)
}

// benchEditFetchRender edits file(j, i) (path relative to repo, content) of repo b.N times,
// each followed by the daemon's fetch and render.
func benchEditFetchRender(b *testing.B, repo string, file func(j, i int) (string, string)) {
	const n = 10000
	ctx := context.Background()
	src, err := local.New(local.Options{Root: repo})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	cache := render.NewCache(render.DefaultCacheBytes)
	fs := filesys.MakeFsOnDisk()
	read := func() (fetch, rend time.Duration) {
		began := time.Now()
		rev, err := src.Fetch(ctx)
		if err != nil {
			b.Fatal(err)
		}
		fetch = time.Since(began)
		began = time.Now()
		res, err := render.New(render.Options{Cache: cache, Digest: func(abs string) ([sha256.Size]byte, bool) {
			rel, err := filepath.Rel(rev.Dir, abs)
			if err != nil || !filepath.IsLocal(rel) {
				return [sha256.Size]byte{}, false
			}
			return src.Digest(filepath.ToSlash(rel))
		}}).RenderContext(ctx, fs, rev.Dir)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Objects) < n {
			b.Fatalf("%d objects rendered", len(res.Objects))
		}
		return fetch, time.Since(began)
	}
	read()
	var fetches, renders []time.Duration
	if f := os.Getenv("GPUCTL_BENCH_CPUPROFILE"); f != "" {
		pf, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rel, content := file((i*7919+42)%n, i+1)
		if err := os.WriteFile(filepath.Join(repo, rel), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond) // the watch's events arrive, as before a sync
		f, r := read()
		fetches, renders = append(fetches, f), append(renders, r)
	}
	b.StopTimer()
	fp, rp := percentile(fetches, 0.5), percentile(renders, 0.5)
	b.ReportMetric(fp.Seconds()*1000, "fetch-ms-p50")
	b.ReportMetric(rp.Seconds()*1000, "render-ms-p50")
	fmt.Printf("one file of %d edited: fetch p50 %s, render p50 %s (%d edits)\n", n, fp.Round(100*time.Microsecond), rp.Round(100*time.Microsecond), len(renders))
}
