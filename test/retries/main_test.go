package retries

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The pools of the tests, one each, so that no test's pods land on another's nodes: a node of
// 8 GPUs that two jobs want (preemption), two nodes of which one is lost (node loss), and a node
// for the runs that fail on their own.
var nodes = []testcluster.NodeSpec{
	poolNode("preempt-0", "preempt-pool"),
	poolNode("loss-0", "loss-pool"),
	poolNode("loss-1", "loss-pool"),
	poolNode("own-0", "own-pool"),
}

func poolNode(name, pool string) testcluster.NodeSpec {
	return testcluster.NodeSpec{Name: name, GPUs: 8, GPUProduct: "NVIDIA-A100-SXM4-80GB", GPUType: "a100-80g",
		CPU: "128", Memory: "1Ti", Labels: map[string]string{keys.Pool: pool}}
}

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{Nodes: nodes})) }

// waitTimeout bounds each wait of a test.
const waitTimeout = 90 * time.Second

// repo is a directory of gpuctl files that a test syncs into namespace default.
type repo struct {
	t   testing.TB
	dir string
}

func newRepo(t testing.TB) *repo { return &repo{t: t, dir: t.TempDir()} }

// write puts a file into the repository.
func (r *repo) write(path, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// training writes a training job of gpus GPUs in pool, of priority, with the job block's extra
// lines (e.g. retries), as directory name/ with a kustomization whose patch writes template
// (YAML below the Job's spec.template, indented 10 spaces: the annotations and labels of kwok's
// fault injection, testcluster.RunFor and FailingPod).
func (r *repo) training(name, pool, priority string, gpus int, extra, template string) {
	r.t.Helper()
	r.write(name+"/train.yaml", fmt.Sprintf(`kind: training
version: v0.1
job:
  name: %s
  priority: %s
%senvironment:
  image: registry.example.com/train:v1
  command: [torchrun, train.py]
resources:
  pool: %s
  gpu: %d
`, name, priority, extra, pool, gpus))
	r.write(name+"/kustomization.yaml", fmt.Sprintf(`resources: [train.yaml]
patches:
  - target: {group: batch, version: v1, kind: Job, name: %s}
    patch: |-
      apiVersion: batch/v1
      kind: Job
      metadata: {name: %s}
      spec:
        template:
%s`, name, name, template))
}

// runFor is the template of training: its pods run for d (testcluster.RunFor).
func runFor(d time.Duration) string {
	return fmt.Sprintf("          metadata:\n            annotations: {%s: %s}\n", testcluster.RunForAnnotation, d)
}

// failWith is the template of training: kwok fails its pods with reason and exit code
// (testcluster.FailingPod).
func failWith(reason string, exitCode int) string {
	return fmt.Sprintf("          metadata:\n            labels: {%s: \"true\"}\n            annotations: {%s: %s, %s: \"%d\"}\n",
		testcluster.FailLabel, testcluster.FailReasonAnnotation, reason, testcluster.FailExitCodeAnnotation, exitCode)
}

// sync runs `gpuctl sync --local` on the repository and fails the test unless it succeeds.
func (r *repo) sync() {
	r.t.Helper()
	out, errOut, code := gpuctl(r.t, "sync", "--local", r.dir, "--max-prune=100%", "--color", "never")
	if code != 0 || strings.Contains(out, "failed") {
		r.t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
}

// gpuctl runs the CLI against the cluster.
func gpuctl(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--kubeconfig", testcluster.Current().Kubeconfig)
	code := app.Run(t.Context(), app.Streams{Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

func newClient(t testing.TB) kubernetes.Interface { return testcluster.NewClient(t) }

// poll is testcluster.Poll with this package's timeout.
func poll(t testing.TB, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	testcluster.Poll(t, what, waitTimeout, cond)
}

// podsOf lists the pods of a Job of namespace default, oldest first.
func podsOf(ctx context.Context, client kubernetes.Interface, job string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return list.Items, nil
}

// finished tells whether a Job of namespace default has ended, and how: its Complete or
// Failed condition.
func finished(ctx context.Context, client kubernetes.Interface, job string) (*batchv1.JobCondition, error) {
	j, err := client.BatchV1().Jobs(metav1.NamespaceDefault).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &c, nil
		}
	}
	return nil, nil
}

// waitFinished waits for a Job of namespace default to end and returns its condition.
func waitFinished(t testing.TB, client kubernetes.Interface, job string) batchv1.JobCondition {
	t.Helper()
	var cond *batchv1.JobCondition
	poll(t, "job "+job+" to end", func(ctx context.Context) (bool, error) {
		var err error
		cond, err = finished(ctx, client, job)
		return cond != nil, err
	})
	return *cond
}

// runningPod waits for a pod of a Job of namespace default that runs, other than the pods
// of skip, and returns it.
func runningPod(t testing.TB, client kubernetes.Interface, job string, skip ...string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	poll(t, "a running pod of job "+job, func(ctx context.Context) (bool, error) {
		pods, err := podsOf(ctx, client, job)
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && !slices.Contains(skip, p.Name) {
				pod = p
				return true, nil
			}
		}
		return false, err
	})
	return pod
}
