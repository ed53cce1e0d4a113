package testcluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// Made-up pod logs for people (hack/cluster up, make demo): every container of every pod on a
// fake node that has no log of its own (WritePodLog) gets plausible lines for its kind (the
// pod label g8s.host/job-type), appended while it runs, so that `gpuctl logs -f` streams; a
// container that ends gets the lines that explain how (a training's last step, an OOM kill,
// a SIGTERM). Tests' clusters do not run it unless a test calls ServeFakePodLogs.

// DemoFailEnv is the environment variable that makes kwok fail a pod that carries it, for the
// demo only (the Stage pod-demo-fail of kwok.yaml): OOMKilled fails its containers with reason
// OOMKilled and exit code 137, any other value with Error and exit code 1. A gpuctl file can
// set it (environment.env) where it cannot set FailLabel.
const DemoFailEnv = "GPUCTL_DEMO_FAIL"

// FakeLogsOptions are the options of ServeFakePodLogs.
type FakeLogsOptions struct {
	// Namespaces limits the pods to these namespaces; empty means every namespace.
	Namespaces []string
	// Interval is the time between two appends to a running container's log (default 2s).
	Interval time.Duration
	// Errors receives the errors of a round (a failed list, a log not served in time); they do
	// not stop the writer. Nil drops them.
	Errors func(error)
}

// fakeRegisterTimeout bounds how long one round waits for kwok to serve a new log file.
const fakeRegisterTimeout = 10 * time.Second

// fakeLog is the state of one pod's made-up log.
type fakeLog struct {
	uid   string
	kind  string
	rng   *rand.Rand
	step  int             // training: the step of the last line; others: lines written
	ended map[string]bool // containers whose end lines are written
}

// ServeFakePodLogs writes made-up logs until ctx ends, then returns nil: every Interval it
// lists the pods bound to a node, gives each container of a pod it has not seen a log (the
// first lines of its kind), appends a line or two to those that run, and the end lines to
// those that have terminated. Pods whose log a test writes (WritePodLog) are left alone. A pod
// that is gone loses its Logs object and files; a new pod of the same name starts afresh.
func (c *Cluster) ServeFakePodLogs(ctx context.Context, o FakeLogsOptions) error {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	report := o.Errors
	if report == nil {
		report = func(error) {}
	}
	namespaces := o.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	logs := map[string]*fakeLog{} // "<namespace>/<pod>"
	for {
		seen := map[string]bool{}
		for _, ns := range namespaces {
			list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
			if err != nil {
				if ctx.Err() == nil {
					report(fmt.Errorf("fake pod logs: list pods: %w", err))
				}
				continue
			}
			for i := range list.Items {
				p := &list.Items[i]
				key := p.Namespace + "/" + p.Name
				seen[key] = true
				if err := c.fakeLogRound(ctx, logs, key, p); err != nil && ctx.Err() == nil {
					report(fmt.Errorf("fake pod logs of %s: %w", key, err))
				}
			}
		}
		for key := range logs {
			if !seen[key] {
				delete(logs, key)
				if err := c.forgetPodLog(ctx, key); err != nil && ctx.Err() == nil {
					report(fmt.Errorf("fake pod logs of %s: %w", key, err))
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Interval):
		}
	}
}

// fakeLogRound writes one round of pod p's made-up log.
func (c *Cluster) fakeLogRound(ctx context.Context, logs map[string]*fakeLog, key string, p *corev1.Pod) error {
	l := logs[key]
	if l != nil && l.uid != string(p.UID) { // the same name, a new pod
		delete(logs, key)
		if err := c.forgetPodLog(ctx, key); err != nil {
			return err
		}
		l = nil
	}
	if l == nil {
		if c.hasPodLog(key) || len(p.Status.ContainerStatuses) == 0 {
			return nil // a test's own log (WritePodLog), or not started yet
		}
		h := fnv.New64a()
		h.Write([]byte(p.UID))
		l = &fakeLog{uid: string(p.UID), kind: p.Labels[keys.JobType], rng: rand.New(rand.NewPCG(h.Sum64(), 35)), ended: map[string]bool{}}
		logs[key] = l
	}
	first := l.step == 0
	var errs []error
	for _, ctr := range p.Spec.Containers {
		if l.ended[ctr.Name] {
			continue
		}
		var lines []string
		if first {
			lines = l.startLines(p, ctr)
		}
		st := containerStatus(p, ctr.Name)
		switch {
		case st != nil && st.State.Terminated != nil:
			lines = append(lines, l.endLines(p, st.State.Terminated)...)
			l.ended[ctr.Name] = true
		case st != nil && st.State.Running != nil:
			lines = append(lines, l.nextLines(p)...)
		}
		if len(lines) == 0 {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, fakeRegisterTimeout)
		err := c.WritePodLog(wctx, LogTarget{Namespace: p.Namespace, Pod: p.Name, Container: ctr.Name}, lines...)
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
	}
	l.step++
	return errors.Join(errs...)
}

// hasPodLog reports whether the pod "<namespace>/<pod>" has a log file (WritePodLog).
func (c *Cluster) hasPodLog(key string) bool {
	c.logsMu.Lock()
	defer c.logsMu.Unlock()
	return len(c.podLogs[key]) > 0
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	i := slices.IndexFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return &p.Status.ContainerStatuses[i]
}

// gpus is the number of whole GPUs of the pod's containers (at least 1).
func gpus(p *corev1.Pod) int64 {
	var n int64
	for _, ctr := range p.Spec.Containers {
		if q, ok := ctr.Resources.Limits[keys.ResourceGPU]; ok {
			n += q.Value()
		}
	}
	return max(n, 1)
}

// trainingSteps is the length of a made-up training run; one round is trainingStride steps.
const (
	trainingSteps  = 1000
	trainingStride = 10
)

// startLines are the first lines of a container's log.
func (l *fakeLog) startLines(p *corev1.Pod, ctr corev1.Container) []string {
	now := time.Now().UTC()
	switch l.kind {
	case "training":
		return []string{
			fmt.Sprintf("torch.distributed initialized: world_size=%d backend=nccl", gpus(p)),
			fmt.Sprintf("image %s, %d x GPU, bf16, ZeRO-3", ctr.Image, gpus(p)),
			"loading dataset: 1,204,311 samples, 2,891 tokens/sample avg",
			fmt.Sprintf("starting training: %d steps, lr=2e-5, warmup 30 steps", trainingSteps),
		}
	case "inference":
		return []string{
			"INFO:     Started server process [1]",
			fmt.Sprintf("INFO:     model loaded on %d GPU(s) in 41.3s (image %s)", gpus(p), ctr.Image),
			"INFO:     Application startup complete.",
			"INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
		}
	case "notebook":
		stamp := now.Format("2006-01-02 15:04:05.000")
		return []string{
			fmt.Sprintf("[I %s ServerApp] Jupyter Server 2.14.2 is running at:", stamp),
			fmt.Sprintf("[I %s ServerApp] http://%s:8888/lab", stamp, p.Name),
			fmt.Sprintf("[I %s ServerApp] Use Control-C to stop this server and shut down all kernels.", stamp),
		}
	case "compute":
		return []string{
			"/docker-entrypoint.sh: Configuration complete; ready for start up",
			now.Format("2006/01/02 15:04:05") + " [notice] 1#1: nginx/1.27.2",
			now.Format("2006/01/02 15:04:05") + " [notice] 1#1: start worker processes",
		}
	}
	return []string{fmt.Sprintf("started %s (image %s)", ctr.Name, ctr.Image)}
}

// nextLines are the lines a running container writes in one round.
func (l *fakeLog) nextLines(p *corev1.Pod) []string {
	now := time.Now().UTC()
	switch l.kind {
	case "training":
		step := min((l.step+1)*trainingStride, trainingSteps)
		if step == trainingSteps && l.step*trainingStride >= trainingSteps {
			return []string{fmt.Sprintf("eval: loss=%.3f accuracy=%.3f", l.loss(step)+0.05, 0.71+l.rng.Float64()*0.01)}
		}
		return []string{l.trainingStep(p, step)}
	case "inference":
		lines := []string{}
		for range 1 + l.rng.IntN(2) {
			path, ms := "/v1/completions", 30+l.rng.IntN(120)
			if l.rng.IntN(4) == 0 {
				path, ms = "/v1/chat/completions", 200+l.rng.IntN(900)
			}
			lines = append(lines, fmt.Sprintf("INFO:     10.244.%d.%d - \"POST %s HTTP/1.1\" 200 OK %dms", l.rng.IntN(4), 2+l.rng.IntN(250), path, ms))
		}
		if l.step%5 == 0 {
			lines = append(lines, fmt.Sprintf("INFO:     %s - \"GET /health HTTP/1.1\" 200 OK 1ms", NodeIP))
		}
		return lines
	case "notebook":
		stamp := now.Format("2006-01-02 15:04:05.000")
		switch l.step % 4 {
		case 0:
			return []string{fmt.Sprintf("[I %s ServerApp] Saving file at /work/prep.ipynb", stamp)}
		case 2:
			return []string{fmt.Sprintf("[I %s ServerApp] Kernel started: %08x-%04x-4%03x-a%03x-%012x", stamp, l.rng.Uint32(), l.rng.IntN(1<<16), l.rng.IntN(1<<12), l.rng.IntN(1<<12), l.rng.Int64N(1<<48))}
		}
		return []string{fmt.Sprintf("[I %s ServerApp] 200 GET /api/kernels?%d (%s) %.2fms", stamp, now.UnixMilli(), NodeIP, 0.5+l.rng.Float64()*3)}
	case "compute":
		paths := []string{"/", "/index.html", "/static/app.js", "/healthz"}
		return []string{fmt.Sprintf("10.244.%d.%d - - [%s] \"GET %s HTTP/1.1\" 200 %d \"-\" \"curl/8.5.0\"", l.rng.IntN(4), 2+l.rng.IntN(250), now.Format("02/Jan/2006:15:04:05 -0700"), paths[l.rng.IntN(len(paths))], 200+l.rng.IntN(800))}
	}
	return []string{fmt.Sprintf("heartbeat %d", l.step)}
}

// endLines are the last lines of a container that has terminated: how it ended.
func (l *fakeLog) endLines(p *corev1.Pod, t *corev1.ContainerStateTerminated) []string {
	step := min((l.step+1)*trainingStride, trainingSteps)
	switch {
	case t.Reason == "OOMKilled":
		lines := []string{}
		if l.kind == "training" {
			lines = append(lines, l.trainingStep(p, step))
		}
		limit := "its memory limit"
		for _, ctr := range p.Spec.Containers {
			if q, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
				limit = "the " + q.String() + " limit"
			}
		}
		return append(lines,
			"WARNING dataloader: 32 workers x prefetch_factor 8: host memory at 97% of "+limit,
			"WARNING dataloader: worker RSS still growing (pinned batches not released)")
	case t.ExitCode == 143:
		return []string{"received SIGTERM: saving a checkpoint and exiting"}
	case t.ExitCode != 0:
		if l.kind == "training" {
			return []string{
				l.trainingStep(p, step),
				"Traceback (most recent call last):",
				`  File "/app/train.py", line 214, in training_step`,
				"    loss.backward()",
				"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free.",
			}
		}
		return []string{fmt.Sprintf("fatal: exiting with code %d", t.ExitCode)}
	}
	if l.kind == "training" {
		return []string{
			l.trainingStep(p, trainingSteps),
			fmt.Sprintf("training done: %d steps; checkpoint saved to /output/%s/checkpoint-%d", trainingSteps, p.Labels["app"], trainingSteps),
		}
	}
	return []string{"shutting down"}
}

// trainingStep is the log line of a training step.
func (l *fakeLog) trainingStep(p *corev1.Pod, step int) string {
	tokens := float64(gpus(p)) * (3100 + l.rng.Float64()*150)
	return fmt.Sprintf("step %d/%d loss=%.3f lr=2e-5 tokens/s=%.0f", step, trainingSteps, l.loss(step), tokens)
}

// loss falls from about 2.4 towards 0.6 as a fine-tune's would, with some noise.
func (l *fakeLog) loss(step int) float64 {
	return 0.6 + 1.8*math.Exp(-float64(step)/350) + (l.rng.Float64()-0.5)*0.04
}

// forgetPodLog deletes the Logs object and log files of the pod "<namespace>/<pod>", so that a
// later pod of the same name starts with empty logs.
func (c *Cluster) forgetPodLog(ctx context.Context, key string) error {
	c.logsMu.Lock()
	defer c.logsMu.Unlock()
	containers, ok := c.podLogs[key]
	if !ok {
		return nil
	}
	ns, pod, _ := strings.Cut(key, "/")
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	err = dyn.Resource(logsResource).Namespace(ns).Delete(ctx, pod, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Logs: %w", err)
	}
	delete(c.podLogs, key)
	if len(containers) > 0 {
		cur, _ := c.podLogFiles(LogTarget{Namespace: ns, Pod: pod, Container: containers[0]})
		return os.RemoveAll(filepath.Dir(cur))
	}
	return nil
}
