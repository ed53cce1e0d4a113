package detector_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// BenchmarkDriftLatency: a kubectl-edit of a managed Deployment until it is in the report
// (report mode), and until the cluster holds Git's value again (correct mode), over 30
// Deployments edited once each (one object edited again and again would meet the loop guard
// of correct mode, which stops after 5 corrections in 5 minutes). Bar: 5 s for both.
func BenchmarkDriftLatency(b *testing.B) {
	for i := 0; i < b.N; i++ {
		for _, mode := range drift.Modes {
			run := uniq()
			ns := "bench-" + mode.String() + "-" + run
			fs := map[string]string{}
			for n := 0; n < 30; n++ {
				fs[fmt.Sprintf("web-%d.yaml", n)] = fmt.Sprintf("kind: compute\nversion: v0.1\njob: {name: web-%d, namespace: %s}\n"+
					"environment: {image: nginx}\nservice: {replicas: 1}\n", n, ns)
			}
			h := newHarness(b, "bench-"+mode.String()+"-"+run, detector.Options{Mode: mode}, fs, ns)
			var lat []time.Duration
			for n := 0; n < 30; n++ {
				name := fmt.Sprintf("web-%d", n)
				start := time.Now()
				h.edit("deployments", ns, name, `{"spec":{"replicas":3}}`)
				if mode == drift.ModeReport {
					h.waitReport("the edit", has(drift.Modified, "Deployment", name))
				} else {
					h.poll("the correction", func() (bool, string) {
						d, err := h.kube.AppsV1().Deployments(ns).Get(h.ctx, name, metav1.GetOptions{})
						return err == nil && *d.Spec.Replicas == 1, "not corrected"
					})
				}
				lat = append(lat, time.Since(start))
			}
			p50, p95, worst := percentile(lat, 0.5), percentile(lat, 0.95), slices.Max(lat)
			b.ReportMetric(p95.Seconds(), mode.String()+"-p95-s")
			what := map[drift.Mode]string{drift.ModeReport: "in the report", drift.ModeCorrect: "corrected"}[mode]
			fmt.Printf("drift %s: kubectl-edit -> %s over 30 edits: p50 %s, p95 %s, max %s (bar 5 s): %s\n", mode, what,
				p50.Round(time.Millisecond), p95.Round(time.Millisecond), worst.Round(time.Millisecond), passFail(worst <= 5*time.Second))
		}
	}
}

// BenchmarkSoak: GPU training Jobs run to completion on the fake nodes for GPUCTL_SOAK
// (default 10m) while new ones are committed, finished ones are removed from Git (pruned) and
// a Deployment keeps its pods running, with a full re-evaluation every 20 s. Bar: zero drift
// reported over the whole soak.
func BenchmarkSoak(b *testing.B) {
	soak := 10 * time.Minute
	if s := os.Getenv("GPUCTL_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("GPUCTL_SOAK=%q: %v", s, err)
		}
		soak = d
	}
	for i := 0; i < b.N; i++ {
		run := uniq()
		ns := "soak-" + run
		job := func(n int) string {
			return "kind: training\nversion: v0.1\njob: {name: train-" + strconv.Itoa(n) + ", namespace: " + ns + "}\n" +
				"environment: {image: x, command: [sleep, '1']}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\n"
		}
		fs := files(ns, "soak-pool", "gpu-a100-0")
		delete(fs, "train.yaml")
		fs["web.yaml"] = "kind: compute\nversion: v0.1\njob: {name: web, namespace: " + ns + "}\nenvironment: {image: nginx}\nservice: {replicas: 2}\n"
		fs["job-0.yaml"] = job(0)
		h := newHarness(b, "soak-"+run, detector.Options{Mode: drift.ModeReport, Resync: 20 * time.Second}, fs)
		h.unlabel("gpu-a100-0")
		start, commits, completed := time.Now(), 0, 0
		for n := 1; time.Since(start) < soak; n++ {
			time.Sleep(15 * time.Second)
			h.write("job-"+strconv.Itoa(n)+".yaml", job(n)) // a new job is committed
			commits++
			if n >= 3 { // and an old, finished one removed
				old := n - 3
				if j, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, "train-"+strconv.Itoa(old), metav1.GetOptions{}); err == nil && finished(j) {
					completed++
				}
				_ = os.Remove(h.dir + "/job-" + strconv.Itoa(old) + ".yaml")
			}
			if r, hist, _ := h.det.Current(); len(r.Items) > 0 || len(hist) > 0 {
				b.Fatalf("false drift after %s: %s; history %s", time.Since(start).Round(time.Second), itemsOf(r), changes(hist))
			}
		}
		r, hist, _ := h.det.Current()
		fmt.Printf("drift soak %s: %d commits, %d jobs ran to completion, %d full re-evaluations; drift items %d, history entries %d (bar 0): %s\n",
			soak, commits, completed, int(soak/(20*time.Second)), len(r.Items), len(hist), passFail(len(r.Items) == 0 && len(hist) == 0))
	}
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == "True" {
			return true
		}
	}
	return false
}
