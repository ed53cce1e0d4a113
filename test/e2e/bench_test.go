package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// Benchmarks of the read verbs against the local cluster (make bench), each against its bar:
// listing 1,000 jobs × 2 pods through the kubeconfig and through the daemon's API (informers),
// with `kubectl get pods -A` on the same cluster in the same run as the reference; and the
// latency of `gpuctl logs -f` of an 8-pod job.

// Sizes and bars of the read benchmarks.
const (
	benchJobs       = 1000
	benchJobPods    = 2
	benchNamespaces = 10
	benchRuns       = 7 // timed runs of each reader; the median is reported
	barDirect       = 500 * time.Millisecond
	barServer       = 300 * time.Millisecond
	barFollow       = time.Second
	followPods      = 8
	followLines     = 40
)

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// median of durations.
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// timeRuns runs f once untimed, then benchRuns times, and returns the median.
func timeRuns(b *testing.B, what string, f func() error) time.Duration {
	b.Helper()
	if err := f(); err != nil {
		b.Fatalf("%s: %v", what, err)
	}
	var d []time.Duration
	for range benchRuns {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		d = append(d, time.Since(start))
	}
	return median(d)
}

// benchConfig is the cluster's REST config with client-side limits raised, so that creating
// the workload measures the cluster, not client-go's default 5 requests a second.
func benchConfig() *rest.Config {
	cfg := rest.CopyConfig(testcluster.Current().RESTConfig())
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

// createJobs creates benchJobs gpuctl training Jobs of benchJobPods pods each (CPU only, so
// that the fake nodes take them all; they run and succeed), in benchNamespaces namespaces, and
// waits until every pod has succeeded.
func createJobs(b *testing.B, kube kubernetes.Interface) {
	b.Helper()
	ctx := b.Context()
	start := time.Now()
	for i := range benchNamespaces {
		ns := fmt.Sprintf("bench-read-%d", i)
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	jobs := make(chan int)
	errs := make(chan error, benchJobs)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range jobs {
				errs <- createBenchJob(ctx, kube, fmt.Sprintf("bench-read-%d", i%benchNamespaces), fmt.Sprintf("train-%04d", i))
			}
		})
	}
	for i := range benchJobs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	sel := labels.SelectorFromSet(labels.Set{keys.ManagedBy: keys.ManagedByValue, keys.JobType: "training"}).String()
	for {
		pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: "0"})
		if err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Namespace, "bench-read-") && p.Status.Phase == corev1.PodSucceeded {
				done++
			}
		}
		if done >= benchJobs*benchJobPods {
			break
		}
		if time.Since(start) > 15*time.Minute {
			b.Fatalf("only %d of %d pods succeeded after %s", done, benchJobs*benchJobPods, time.Since(start))
		}
		time.Sleep(2 * time.Second)
	}
	fmt.Printf("read benchmarks: %d jobs × %d pods created and succeeded in %s\n", benchJobs, benchJobPods, time.Since(start).Round(time.Second))
}

func createBenchJob(ctx context.Context, kube kubernetes.Interface, ns, name string) error {
	l := map[string]string{keys.ManagedBy: keys.ManagedByValue, keys.JobType: "training", keys.App: name,
		keys.Pool: keys.DefaultPool, keys.Priority: "medium"}
	pods := int32(benchJobPods)
	mode := batchv1.IndexedCompletion
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l,
			Annotations: map[string]string{keys.Source: "teams/" + ns + "/" + name + ".yaml"}},
		Spec: batchv1.JobSpec{Parallelism: &pods, Completions: &pods, CompletionMode: &mode, BackoffLimit: new(int32),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "train", Image: "registry.example.com/llama-factory:v0.8.0",
					Command:   []string{"llamafactory-cli", "train", "--stage", "sft"},
					Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}},
	}
	_, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	return err
}

// run runs a command and returns its standard output, or its error with its standard error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// benchToken is the admin token of the benchmark's daemon.
const benchToken = "bench-admin-token"

// BenchmarkGetJobs: 1,000 jobs × 2 pods listed by the built gpuctl binary, `gpuctl get jobs
// -A`, through the kubeconfig (bar 0.5 s) and through the API of the gpuctl-reconciler binary,
// which answers from its informers (--server, bar 0.3 s), with `kubectl get pods -A` on the
// same cluster in the same run as the reference; medians of benchRuns runs, each a new process.
func BenchmarkGetJobs(b *testing.B) {
	for range b.N {
		benchGetJobs(b)
	}
}

func benchGetJobs(b *testing.B) {
	c := testcluster.Current()
	ctx := b.Context()
	kube := kubernetes.NewForConfigOrDie(benchConfig())
	createJobs(b, kube)
	time.Sleep(5 * time.Second) // the controllers' last status writes

	bins, err := testcluster.Binaries(ctx, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	kubectl := filepath.Join(bins, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		b.Fatalf("no kubectl, the reference (GPUCTL_WITH_KUBECTL=1 hack/cluster-tools.sh builds it): %v", err)
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
	url := startDaemon(b, nil, benchToken+",ops,admin\n")

	// Each reader once, untimed: its rows (a header and a row per pod) are the workload's.
	rows := benchJobs*benchJobPods + 1
	type reader struct {
		how  string
		args []string
		bin  string
	}
	direct := reader{"gpuctl get jobs -A --kubeconfig", []string{"get", "jobs", "-A", "--kubeconfig", c.Kubeconfig}, gpuctl}
	server := reader{"gpuctl get jobs -A --server (gpuctl-reconciler's informers)", []string{"get", "jobs", "-A", "--server", url, "--token", benchToken}, gpuctl}
	reference := reader{"kubectl get pods -A", []string{"get", "pods", "-A", "--kubeconfig", c.Kubeconfig,
		"--cache-dir", filepath.Join(b.TempDir(), "kube-cache")}, kubectl}
	var took [3]time.Duration
	for i, r := range []reader{direct, server, reference} {
		took[i] = timeRuns(b, r.how, func() error {
			out, err := run(ctx, r.bin, r.args...)
			if err == nil && strings.Count(out, "\n") < rows {
				err = fmt.Errorf("%d lines, want at least %d:\n%.2000s", strings.Count(out, "\n"), rows, out)
			}
			return err
		})
	}
	b.ReportMetric(took[0].Seconds(), "kubeconfig-s")
	b.ReportMetric(took[1].Seconds(), "server-s")
	b.ReportMetric(took[2].Seconds(), "kubectl-s")
	fmt.Printf("get jobs -A, %d jobs × %d pods, median of %d runs of each process:\n", benchJobs, benchJobPods, benchRuns)
	for i, bar := range []time.Duration{barDirect, barServer} {
		r := []reader{direct, server}[i]
		fmt.Printf("  %s: %s (bar %s): %s; %.2f× kubectl\n", r.how, took[i].Round(time.Millisecond), bar,
			passFail(took[i] <= bar), took[i].Seconds()/took[2].Seconds())
	}
	fmt.Printf("  reference, %s: %s\n", reference.how, took[2].Round(time.Millisecond))
}

// lineClock is an io.Writer that records when each line containing a marker was written.
type lineClock struct {
	mu   sync.Mutex
	buf  []byte
	seen map[string]time.Time
}

func (l *lineClock) Write(p []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		if _, m, ok := strings.Cut(line, "mark-"); ok {
			l.seen["mark-"+m] = now
		}
	}
	return len(p), nil
}

func (l *lineClock) at(mark string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.seen[mark]
	return t, ok
}

// BenchmarkLogsFollow: `gpuctl logs -f` of an 8-pod job, from a pod writing a line (kwok's
// log file, read through the API server's pod-log path) to gpuctl printing it, over
// followLines lines round-robin over the pods. Bar: every line within 1 s.
func BenchmarkLogsFollow(b *testing.B) {
	for range b.N {
		benchLogsFollow(b)
	}
}

func benchLogsFollow(b *testing.B) {
	c := testcluster.Current()
	ctx := b.Context()
	kube := kubernetes.NewForConfigOrDie(benchConfig())
	ns := "bench-follow"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// A Deployment of 8 replicas: the fake nodes end a Job's pods after a second, and a
	// follow needs pods that keep running; the log path is the same.
	replicas := int32(followPods)
	tmpl := gpuTemplate("ddp", "compute", 0)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "ddp", Namespace: ns, Labels: tmpl.Labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: "ddp"}}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var pods []string
	for len(pods) < followPods {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: keys.App + "=ddp"})
		if err != nil {
			b.Fatal(err)
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				pods = append(pods, p.Name)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	write := func(pod string, line string) {
		if err := c.WritePodLog(ctx, testcluster.LogTarget{Namespace: ns, Pod: pod, Container: "main"}, line); err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range pods {
		write(p, "started") // registers the log with kwok: not timed
	}
	out := &lineClock{seen: map[string]time.Time{}}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		cmd := app.NewRootCommand(app.Streams{Out: out, Err: io.Discard})
		cmd.SetArgs([]string{"logs", ns + ".ddp", "-f", "--tail", "0", "--kubeconfig", c.Kubeconfig})
		done <- app.Code(cmd.ExecuteContext(fctx))
	}()
	time.Sleep(2 * time.Second) // the follow has opened every pod's stream
	var lat []time.Duration
	for i := range followLines {
		mark := fmt.Sprintf("mark-%03d", i)
		start := time.Now()
		write(pods[i%len(pods)], "step "+mark)
		for {
			if t, ok := out.at(mark); ok {
				lat = append(lat, t.Sub(start))
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("gpuctl logs -f did not print %s within 10 s", mark)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	stop()
	<-done
	slices.Sort(lat)
	p50, p95, worst := lat[len(lat)/2], lat[len(lat)*95/100], lat[len(lat)-1]
	b.ReportMetric(p50.Seconds(), "p50-s")
	b.ReportMetric(worst.Seconds(), "max-s")
	fmt.Printf("gpuctl logs -f of %d pods, pod writes a line → gpuctl prints it, %d lines: p50 %s, p95 %s, max %s (bar 1 s): %s\n",
		followPods, followLines, p50.Round(time.Millisecond), p95.Round(time.Millisecond), worst.Round(time.Millisecond), passFail(worst <= barFollow))
}
