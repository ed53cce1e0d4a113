package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/dcgmtest"
	"github.com/gpuctl/gpuctl/test/promtest"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"github.com/gpuctl/gpuctl/usage"
)

// The top benchmark's size and bar (issue 34): gpuctl top jobs -A over 1,000 GPU pods, p50
// ≤ 0.5 s, beside the floor: the same PromQL queries sent bare to the same Prometheus.
const (
	topNodes       = 125 // × 8 GPUs
	topJobs        = 250 // × 4 pods × 1 GPU: 1,000 GPU pods
	topJobPods     = 4
	topNamespaces  = 10
	barTop         = 500 * time.Millisecond
	topBenchLabel  = "gpuctl.test/bench-top"
	topBenchTaint  = "gpuctl.test/bench-top"
	topBenchRunFor = time.Hour
)

// BenchmarkTopJobs1000: 1,000 running pods of 1 GPU each on 125 fake nodes of 8, a
// dcgm-exporter stand-in serving their GPUs (test/dcgmtest), a real Prometheus scraping it
// (test/promtest); the built gpuctl binary's `top jobs -A` (a new process each run: the
// read model's lists and the four PromQL queries), median of benchRuns runs, against the
// floor: the same four queries sent bare, at once, by one HTTP client.
func BenchmarkTopJobs1000(b *testing.B) {
	for range b.N {
		benchTop(b)
	}
}

func benchTop(b *testing.B) {
	c := testcluster.Current()
	ctx := b.Context()
	kube := kubernetes.NewForConfigOrDie(benchConfig())
	start := time.Now()
	pods := createTopWorkload(b, c, kube)
	fmt.Printf("top benchmark: %d nodes, %d running GPU pods in %s\n", topNodes, len(pods), time.Since(start).Round(time.Second))

	gpus := dcgmtest.ForPods(pods)
	for i := range gpus {
		gpus[i].Util = float64(i % 101)
		gpus[i].MemUsedMiB = float64(1000 + i)
		gpus[i].PowerW = 100 + float64(i%500)
	}
	exp, err := dcgmtest.Start(dcgmtest.Plain, gpus)
	if err != nil {
		b.Fatal(err)
	}
	defer exp.Close()
	prom := promtest.StartT(b, promtest.Options{Targets: []string{exp.Addr}})
	if err := prom.WaitScraped(ctx); err != nil {
		b.Fatal(err)
	}
	root, err := testcluster.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	gpuctl := filepath.Join(b.TempDir(), "gpuctl")
	build := exec.CommandContext(ctx, "go", "build", "-o", gpuctl, "./cmd/gpuctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build gpuctl: %v\n%s", err, out)
	}
	top := timeRuns(b, "gpuctl top jobs -A", func() error {
		out, err := run(ctx, gpuctl, "top", "jobs", "-A", "--kubeconfig", c.Kubeconfig, "--prometheus-url", prom.URL)
		if err != nil {
			return err
		}
		rows := 0
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, "bench-top-") {
				rows++
				if strings.Contains(line, " - ") {
					return fmt.Errorf("a job without series: %s", line)
				}
			}
		}
		if rows != topJobs {
			return fmt.Errorf("%d rows of the benchmark's jobs, want %d:\n%.2000s", rows, topJobs, out)
		}
		return nil
	})
	queries := usage.GPUQueries(usage.Scope{}, usage.DefaultWindow)
	floor := timeRuns(b, "the bare queries", func() error { return bareQueries(ctx, prom.URL, queries) })
	b.ReportMetric(top.Seconds(), "top-s")
	b.ReportMetric(floor.Seconds(), "floor-s")
	fmt.Printf("gpuctl top jobs -A, %d GPU pods of %d jobs, median of %d runs: %s (bar %s): %s; floor (the same %d PromQL queries sent bare, at once): %s; %.1f× the floor\n",
		len(pods), topJobs, benchRuns, top.Round(time.Millisecond), barTop, passFail(top <= barTop), len(queries), floor.Round(time.Millisecond),
		top.Seconds()/floor.Seconds())
}

// bareQueries sends the queries to Prometheus' /api/v1/query at once and reads each answer.
func bareQueries(ctx context.Context, base string, queries []string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(queries))
	for i, q := range queries {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/query",
				strings.NewReader(url.Values{"query": {q}, "time": {fmt.Sprint(time.Now().Unix())}}.Encode()))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				errs[i] = fmt.Errorf("%s: %d %v %.300s", q, resp.StatusCode, err, body)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// createTopWorkload adds the benchmark's GPU nodes (tainted for it alone), creates topJobs
// gpuctl training Jobs of topJobPods pods of 1 GPU that run for an hour, and returns their pods
// once all are Running.
func createTopWorkload(b *testing.B, c *testcluster.Cluster, kube kubernetes.Interface) []corev1.Pod {
	b.Helper()
	ctx := b.Context()
	taint := corev1.Taint{Key: topBenchTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	var wg sync.WaitGroup
	nodeErrs := make(chan error, topNodes)
	sem := make(chan struct{}, 16)
	for i := range topNodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			nodeErrs <- c.AddNode(ctx, testcluster.NodeSpec{Name: fmt.Sprintf("bench-top-%03d", i), GPUs: 8, GPUProduct: "NVIDIA-H100-80GB-HBM3",
				GPUType: "h100-80g", CPU: "128", Memory: "1Ti", Labels: map[string]string{topBenchLabel: "true"}, Taints: []corev1.Taint{taint}})
		})
	}
	wg.Wait()
	close(nodeErrs)
	for err := range nodeErrs {
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range topNamespaces {
		ns := fmt.Sprintf("bench-top-%d", i)
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	jobErrs := make(chan error, topJobs)
	for i := range topJobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			jobErrs <- createTopJob(ctx, kube, fmt.Sprintf("bench-top-%d", i%topNamespaces), fmt.Sprintf("sft-%03d", i), taint)
		})
	}
	wg.Wait()
	close(jobErrs)
	for err := range jobErrs {
		if err != nil {
			b.Fatal(err)
		}
	}
	sel := labels.SelectorFromSet(labels.Set{keys.ManagedBy: keys.ManagedByValue, keys.JobType: "training"}).String()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		list, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: "0"})
		if err != nil {
			b.Fatal(err)
		}
		var running []corev1.Pod
		for _, p := range list.Items {
			if strings.HasPrefix(p.Namespace, "bench-top-") && p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			}
		}
		if len(running) >= topJobs*topJobPods {
			return running
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d GPU pods run after 10 minutes", len(running), topJobs*topJobPods)
		}
		time.Sleep(2 * time.Second)
	}
}

func createTopJob(ctx context.Context, kube kubernetes.Interface, ns, name string, taint corev1.Taint) error {
	l := map[string]string{keys.ManagedBy: keys.ManagedByValue, keys.JobType: "training", keys.App: name,
		keys.Pool: keys.DefaultPool, keys.Priority: "medium"}
	pods := int32(topJobPods)
	mode := batchv1.IndexedCompletion
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		keys.ResourceGPU: resource.MustParse("1")}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		NodeSelector:  map[string]string{topBenchLabel: "true"},
		Tolerations:   []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}},
		Containers: []corev1.Container{{Name: "train", Image: "registry.example.com/llama-factory:v0.8.0",
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}
	testcluster.RunFor(&tmpl, topBenchRunFor)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l,
			Annotations: map[string]string{keys.Source: "teams/" + ns + "/" + name + ".yaml"}},
		Spec: batchv1.JobSpec{Parallelism: &pods, Completions: &pods, CompletionMode: &mode, BackoffLimit: new(int32), Template: tmpl},
	}
	_, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	return err
}
