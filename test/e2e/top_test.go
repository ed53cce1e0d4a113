package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/dcgmtest"
	"github.com/gpuctl/gpuctl/test/promtest"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"github.com/gpuctl/gpuctl/usage"
)

// topNamespace and topNode are TestTopJobs' own: the node is tainted for its pods alone.
const (
	topNamespace = "top-e2e"
	topNode      = "top-gpu-0"
	topTaint     = "gpuctl.test/top-e2e"
)

// TestTopJobs (issue 34's bar): GPU jobs running on the kwok cluster, the dcgm-exporter
// stand-in serving what their GPUs do in kube-prometheus-stack's exported_ labels, a real
// Prometheus scraping it; `gpuctl top jobs -A` shows each job's utilization and GPU memory
// equal (±1) to what the exporter served, in its table and in -o json.
func TestTopJobs(t *testing.T) {
	c := testcluster.Current()
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	taint := corev1.Taint{Key: topTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	if err := c.AddNode(ctx, testcluster.NodeSpec{Name: topNode, GPUs: 8, GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUType: "h100-80g",
		Labels: map[string]string{topTaint: "true"}, Taints: []corev1.Taint{taint}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNode(context.Background(), topNode) })
	ns := logsNamespace(t, kube, topNamespace)
	// sft: 2 ranks of 2 GPUs; nb: a notebook's 1 GPU.
	for _, j := range []struct {
		name       string
		pods, gpus int32
	}{{"sft", 2, 2}, {"nb", 1, 1}} {
		tmpl := gpuTemplate(j.name, "training", int64(j.gpus))
		tmpl.Spec.NodeSelector = map[string]string{topTaint: "true"}
		tmpl.Spec.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}}
		testcluster.RunFor(&tmpl, time.Hour)
		pods := j.pods
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: ns, Labels: tmpl.Labels}, Spec: batchv1.JobSpec{Parallelism: &pods, Completions: &pods,
			Template: tmpl, BackoffLimit: new(int32)}}
		if j.pods > 1 {
			mode := batchv1.IndexedCompletion
			job.Spec.CompletionMode = &mode
		}
		if _, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := append(startedPods(t, kube, ns, "sft", 2), startedPods(t, kube, ns, "nb", 1)...)

	gpus := dcgmtest.ForPods(pods)
	if len(gpus) != 5 {
		t.Fatalf("%d GPUs for the pods, want 5", len(gpus))
	}
	// what each job's GPUs do: utilization and memory used, by pod name prefix
	served := map[string][]float64{"sft": {87, 61, 13, 100}, "nb": {3}}
	usedMiB := map[string][]float64{"sft": {40960, 30000, 20480, 81000}, "nb": {10240}}
	next := map[string]int{}
	for i, g := range gpus {
		job, _, _ := strings.Cut(g.Pod, "-")
		k := next[job]
		next[job]++
		gpus[i].Util, gpus[i].MemUsedMiB, gpus[i].PowerW = served[job][k], usedMiB[job][k], 100+10*float64(i)
	}
	exp, err := dcgmtest.Start(dcgmtest.Exported, gpus)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	prom := promtest.StartT(t, promtest.Options{Targets: []string{exp.Addr}})
	if err := prom.WaitScraped(ctx); err != nil {
		t.Fatal(err)
	}

	want := map[string]struct{ util, usedGiB, totalGiB float64 }{}
	for job := range served {
		var u, m float64
		for k := range served[job] {
			u += served[job][k]
			m += usedMiB[job][k]
		}
		n := float64(len(served[job]))
		want[job] = struct{ util, usedGiB, totalGiB float64 }{u / n, m / 1024, n * dcgmtest.DefaultMemTotalMiB / 1024}
	}

	out, errOut, code := gpuctl(t, "top", "jobs", "-A", "--prometheus-url", prom.URL)
	if code != 0 {
		t.Fatalf("top jobs -A: exit %d: %s", code, errOut)
	}
	rows := 0
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 8 || f[0] != ns {
			continue
		}
		rows++
		w, ok := want[f[1]]
		if !ok {
			t.Errorf("a row of no job of the test: %s", line)
			continue
		}
		var util, used, total float64
		_, err1 := fmt.Sscanf(f[4], "%f%%", &util)
		_, err2 := fmt.Sscanf(f[5], "%f/%f", &used, &total)
		if err1 != nil || err2 != nil || math.Abs(util-w.util) > 1 || math.Abs(used-w.usedGiB) > 1 || math.Abs(total-w.totalGiB) > 1 {
			t.Errorf("%s: util %s, memory %s GiB; the exporter served %.1f%%, %.1f/%.1f GiB", f[1], f[4], f[5], w.util, w.usedGiB, w.totalGiB)
		}
	}
	if rows != len(want) {
		t.Errorf("%d rows of %s, want %d:\n%s", rows, ns, len(want), out)
	}

	out, errOut, code = gpuctl(t, "top", "jobs", "-n", ns, "--prometheus-url", prom.URL, "-o", "json")
	var list app.TopList[usage.JobTop]
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != len(want) {
		t.Fatalf("top jobs -o json: exit %d: %s\n%s", code, errOut, out)
	}
	for _, r := range list.Items {
		w := want[r.Name]
		if math.Abs(r.Util-w.util) > 1 || math.Abs(r.MemUsedMiB/1024-w.usedGiB) > 1 || r.Reporting != len(served[r.Name]) || r.GPUs != int64(len(served[r.Name])) {
			t.Errorf("%s: %+v; the exporter served %.1f%%, %.1f GiB on %d GPUs", r.Name, r.Usage, w.util, w.usedGiB, len(served[r.Name]))
		}
	}
}
