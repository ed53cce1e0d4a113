package review_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// benchBar is the time a diff of two revisions of a 1,000-file repository may take.
const benchBar = 2 * time.Second

func benchJob(i, gpus int) string {
	return fmt.Sprintf(`kind: training
version: v0.1
job: {name: job-%04d}
environment: {image: registry.example.com/llama-factory:v0.8.0, command: [llamafactory-cli, train]}
resources: {pool: training-pool, gpu: %d, gpu-type: A100-80G, cpu: 16, memory: 64Gi}
storage: {workdirs: [{path: /models/qwen2-7b}, {path: /output/job-%04d}]}
`, i, gpus, i)
}

// benchRepo commits 1,000 workload files in 20 team directories, then a second commit that
// changes 100 of them, adds 10 and deletes 10.
func benchRepo(b *testing.B) *gittest.Remote {
	r := gittest.New(b, nil)
	files := map[string]string{
		".gpuctl.yaml":       fixtureConfig,
		"gpuctl-policy.yaml": fixturePolicy,
		"pools/pools.yaml":   fixturePools,
	}
	path := func(i int) string { return fmt.Sprintf("teams/team-%02d/job-%04d.yaml", i%20, i) }
	for i := 0; i < 997; i++ {
		files[path(i)] = benchJob(i, 1+i%4)
	}
	r.Commit("base", files)
	next := map[string]string{}
	for i := 0; i < 100; i++ {
		next[path(i*9)] = benchJob(i*9, 8)
	}
	for i := 997; i < 1007; i++ {
		next[path(i)] = benchJob(i, 2)
	}
	for i := 900; i < 910; i++ {
		next[path(i)] = ""
	}
	r.Commit("head", next)
	return r
}

// BenchmarkReviewDiff1000 reads, renders and compares two revisions of a 1,000-file
// repository from Git (no checkout, no cluster), and formats the markdown comment.
// The bar is 2 s.
func BenchmarkReviewDiff1000(b *testing.B) {
	r := benchRepo(b)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		rep, err := review.Run(review.Options{Dir: r.Work, Base: "HEAD~1", Head: "HEAD"})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Base.Files != 1000 || len(rep.Changes) != 120 {
			b.Fatalf("%d base files, %d changes", rep.Base.Files, len(rep.Changes))
		}
		_ = review.Markdown(rep, review.MarkdownOptions{})
	}
	per := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(per.Seconds(), "s/diff")
	b.ReportMetric(benchBar.Seconds()/per.Seconds(), "x-under-bar")
	verdict := "met"
	if per > benchBar {
		verdict = "NOT met"
	}
	b.Logf("diff of two revisions of a 1,000-file repository: %s; bar %s %s", per.Round(time.Millisecond), benchBar, verdict)
}
