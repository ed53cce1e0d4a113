package app

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkAPICreateToJob: POST /api/v1/jobs to gpuctl-reconciler with a Git source (served by
// git http-backend, --git-push) until the Job is in the cluster, over 30 writes one after the
// other: the commit, its push, the sync it triggers. Bar: p50 <= 1 s.
func BenchmarkAPICreateToJob(b *testing.B) {
	for i := 0; i < b.N; i++ {
		tm := newTeam(fmt.Sprintf("wb%d", i))
		g := newGitRemote(b, tm)
		d := startWriteDaemon(b, tm, "--source", "git:"+g.URL, "--ref", "main", "--git-push", "--git-poll-interval", "0",
			"--work-dir", filepath.Join(b.TempDir(), "clone"))
		const n = 30
		var lat, answered []time.Duration
		for j := range n {
			name := fmt.Sprintf("bench-%02d", j)
			start := time.Now()
			if code, _, body := d.create(aliceToken, training(name, "")); code != http.StatusCreated {
				b.Fatalf("POST %s: %d %s", name, code, body)
			}
			answered = append(answered, time.Since(start))
			d.waitJob(tm.alice, name, "created", exists)
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		slices.Sort(answered)
		p50, p90 := lat[n/2], lat[n*9/10]
		b.ReportMetric(p50.Seconds(), "p50-s")
		b.ReportMetric(p90.Seconds(), "p90-s")
		verdict := "PASS"
		if p50 > time.Second {
			verdict = "FAIL"
		}
		fmt.Printf("POST /api/v1/jobs -> Job created (Git source, --git-push) over %d writes: p50 %s, p90 %s, max %s (bar p50 1 s): %s; the answer (commit and push) p50 %s\n",
			n, p50.Round(time.Millisecond), p90.Round(time.Millisecond), lat[n-1].Round(time.Millisecond), verdict, answered[n/2].Round(time.Millisecond))
		d.cancel()
	}
}
