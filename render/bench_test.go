package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/render"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// benchFile returns workload file i of a generated repository: a mix of every kind.
func benchFile(i int) string {
	name := fmt.Sprintf("job-%04d", i)
	switch i % 10 {
	case 0, 1, 2, 3:
		return fmt.Sprintf(`kind: training
version: v0.1
job: {name: %s, priority: high, description: "sweep %d"}
environment:
  image: registry.example.com/llama-factory:v0.8.0
  command: [llamafactory-cli, train, --stage, sft, --learning_rate, "2e-5"]
  env: [{name: NCCL_DEBUG, value: INFO}, {name: SEED, value: "%d"}]
resources: {pool: training-pool, gpu: 8, gpu-type: A100-80G, cpu: 64, memory: 512Gi, node_count: %d}
storage:
  workdirs: [{path: /models/qwen2-7b}, {path: /datasets/alpaca.json}, {path: /output/%s}]
`, name, i, i, 1+i%2, name)
	case 4, 5, 6:
		return fmt.Sprintf(`kind: inference
version: v0.1
job: {name: %s}
environment: {image: vllm/vllm-openai:v0.6.0, args: [--model, /models/llama3-8b]}
service: {replicas: 2, port: 8000, health_check: /health}
resources: {pool: inference-pool, gpu: 1, gpuType: H100-80G, cpu: 8, memory: 32Gi}
storage: {workdirs: [{path: /models/llama3-8b}]}
`, name)
	case 7:
		return fmt.Sprintf(`kind: notebook
version: v0.1
job: {name: %s}
environment: {image: jupyter/pytorch-notebook:latest}
resources: {pool: dev-pool, gpu: 1, cpu: 4, memory: 16Gi}
storage: {workdirs: [{path: /output/jovyan/work}]}
`, name)
	default:
		return fmt.Sprintf(`kind: compute
version: v0.1
job: {name: %s}
environment: {image: nginx:1.27}
service: {replicas: 2, port: 80}
resources: {cpu: 1, memory: 1Gi}
`, name)
	}
}

func benchRepo(b *testing.B, n int) filesys.FileSystem {
	fs := filesys.MakeFsInMemory()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(fs.WriteFile("/repo/.gpuctl.yaml", []byte("namespaces: [{path: teams/*/**, namespace: $1}]\n")))
	for i := 0; i < n; i++ {
		dir := fmt.Sprintf("/repo/teams/team-%02d", i%20)
		must(fs.MkdirAll(dir))
		must(fs.WriteFile(fmt.Sprintf("%s/%s.yaml", dir, fmt.Sprintf("job-%04d", i)), []byte(benchFile(i))))
	}
	return fs
}

// BenchmarkRender1000Files renders a repository of 1,000 workload files (in memory) end to
// end: walk, parse, validate, render, sort. The bar is 0.5 s for the 1,000 files.
func BenchmarkRender1000Files(b *testing.B) {
	fs := benchRepo(b, 1000)
	r := render.New(render.Options{})
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res, err := r.Render(fs, "/repo")
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Documents) != 1000 {
			b.Fatalf("rendered %d documents", len(res.Documents))
		}
	}
	perRender := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(1000/perRender.Seconds(), "files/s")
	b.ReportMetric(perRender.Seconds(), "s/1000files")
	b.ReportMetric(0.5/perRender.Seconds(), "x-under-bar")
}

// BenchmarkRender1000FilesDisk is the same repository on disk, with YAML output, as
// `gpuctl render` does it.
func BenchmarkRender1000FilesDisk(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < 1000; i++ {
		p := filepath.Join(dir, "teams", fmt.Sprintf("team-%02d", i%20), fmt.Sprintf("job-%04d.yaml", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(benchFile(i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	r := render.New(render.Options{})
	fs := filesys.MakeFsOnDisk()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res, err := r.Render(fs, dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := render.MarshalYAML(res.Objects); err != nil {
			b.Fatal(err)
		}
	}
	perRender := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(1000/perRender.Seconds(), "files/s")
	b.ReportMetric(perRender.Seconds(), "s/1000files")
}

// BenchmarkRender10000FilesEdit is the incremental render of issue #18: a repository of
// 10,000 workload files rendered once with a Cache, then one file edited and rendered again,
// b.N times. It prints the cold render, the p50 of the edits' renders, the cache's heap (live
// heap after GC, with and without the cache's contents) and PASS or FAIL against the
// render's share of the 0.3 s edit→applied bar: 0.15 s p50.
func BenchmarkRender10000FilesEdit(b *testing.B) {
	const n, budget = 10000, 150 * time.Millisecond
	fs := benchRepo(b, n)
	heapBefore := liveHeap()
	cache := render.NewCache(render.DefaultCacheBytes)
	start := time.Now()
	if _, err := render.New(render.Options{Cache: cache}).Render(fs, "/repo"); err != nil {
		b.Fatal(err)
	}
	cold := time.Since(start)
	heapCache := liveHeap() - heapBefore
	r := render.New(render.Options{Cache: cache})
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := i * 7 % n
		path := fmt.Sprintf("/repo/teams/team-%02d/job-%04d.yaml", f%20, f)
		content := strings.Replace(benchFile(f), "job: {name: ", fmt.Sprintf("# edit %d\njob: {name: ", i), 1)
		if err := fs.WriteFile(path, []byte(content)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := r.Render(fs, "/repo")
		times = append(times, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Documents) != n {
			b.Fatalf("rendered %d documents", len(res.Documents))
		}
	}
	b.StopTimer()
	slices.Sort(times)
	p50 := times[len(times)/2]
	verdict := "PASS"
	if p50 > budget {
		verdict = "FAIL"
	}
	s := cache.Stats()
	b.Logf("render 10,000 files: cold %.3f s, edit p50 %.3f s (%d renders), %.1fx faster; cache heap %.1f MiB (%d entries, counted %.1f MiB); %s against %.2f s",
		cold.Seconds(), p50.Seconds(), len(times), cold.Seconds()/p50.Seconds(), float64(heapCache)/(1<<20), s.Entries, float64(s.Bytes)/(1<<20), verdict, budget.Seconds())
	b.ReportMetric(p50.Seconds(), "s/edit-p50")
	b.ReportMetric(cold.Seconds(), "s/cold")
	b.ReportMetric(float64(heapCache)/(1<<20), "MiB-cache")
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkRender10000FilesHeld is BenchmarkRender10000FilesEdit with one team held (issue
// 30: a team's errors hold only that team): team-07 has a file that render refuses, and each
// edit of another team's file is rendered with Options.Hold, which renders the tree again
// without team-07's files. It prints the p50 of the held renders beside that of the same
// edits without the bad file, measured in the same run: what holding a team costs a sync.
func BenchmarkRender10000FilesHeld(b *testing.B) {
	const n = 10000
	fs := benchRepo(b, n)
	cache := render.NewCache(render.DefaultCacheBytes)
	r := render.New(render.Options{Cache: cache, Hold: true})
	if _, err := r.Render(fs, "/repo"); err != nil {
		b.Fatal(err)
	}
	const bad = "/repo/teams/team-07/widget.yaml"
	edits := func(held bool) time.Duration {
		times := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			f := i * 7 % n
			if f%20 == 7 {
				f++
			}
			path := fmt.Sprintf("/repo/teams/team-%02d/job-%04d.yaml", f%20, f)
			content := strings.Replace(benchFile(f), "job: {name: ", fmt.Sprintf("# edit %d %v\njob: {name: ", i, held), 1)
			if err := fs.WriteFile(path, []byte(content)); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			res, err := r.Render(fs, "/repo")
			times = append(times, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			if got := render.HeldNamespaces(res.Held); held != slices.Equal(got, []string{"team-07"}) {
				b.Fatalf("held %v", got)
			}
		}
		slices.Sort(times)
		return times[len(times)/2]
	}
	b.ResetTimer()
	clean := edits(false)
	if err := fs.WriteFile(bad, []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: root}\n")); err != nil {
		b.Fatal(err)
	}
	held := edits(true)
	b.StopTimer()
	b.Logf("render 10,000 files, an edit of another team's file: p50 %.3f s with team-07 held, %.3f s with no team held (%.2fx)",
		held.Seconds(), clean.Seconds(), held.Seconds()/clean.Seconds())
	b.ReportMetric(held.Seconds(), "s/held-edit-p50")
	b.ReportMetric(clean.Seconds(), "s/edit-p50")
}
