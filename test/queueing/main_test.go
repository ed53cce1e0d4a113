package queueing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, testcluster.Options{Kueue: true, JobSet: true}))
}

// The tests of this package share the cluster's pool nodes and the cohort, so they run one
// after the other (none calls t.Parallel) and each leaves its team's namespace empty.

var workloadsGVR = schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: "workloads"}

// repo is a copy of testdata/repo that a test edits and syncs.
type repo struct {
	t   testing.TB
	dir string
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-a", "testdata/repo/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return &repo{t: t, dir: dir}
}

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

// edit replaces old by new in a file of the repository; old must occur once.
func (r *repo) edit(path, old, new string) {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, path))
	if err != nil {
		r.t.Fatal(err)
	}
	if strings.Count(string(b), old) != 1 {
		r.t.Fatalf("%s does not hold %q once", path, old)
	}
	r.write(path, strings.Replace(string(b), old, new, 1))
}

// remove deletes a file or directory of the repository.
func (r *repo) remove(path string) {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.dir, path)); err != nil {
		r.t.Fatal(err)
	}
}

// training writes a gpuctl training job of the team: nodes pods of gpus GPUs each in
// training-pool.
func (r *repo) training(team, name, priority string, gpus, nodes int) {
	r.write(fmt.Sprintf("teams/%s/%s.yaml", team, name), fmt.Sprintf(`kind: training
version: v0.1
job:
  name: %s
  priority: %s
environment:
  image: registry.example.com/train:v1
  command: [python, train.py]
resources:
  pool: training-pool
  gpu: %d
  node_count: %d
`, name, priority, gpus, nodes))
}

// plainJob writes a plain Job manifest of the team without a queue label (Kueue puts it in
// the namespace's LocalQueue default): one pod of gpus GPUs in training-pool that kwok keeps
// Running for runFor, with the WorkloadPriorityClass priorityClass unless it is empty.
func (r *repo) plainJob(team, name string, gpus int, runFor time.Duration, priorityClass string) {
	labels := "{}"
	if priorityClass != "" {
		labels = "{" + keys.KueuePriorityClass + ": " + priorityClass + "}"
	}
	r.write(fmt.Sprintf("teams/%s/%s.yaml", team, name), fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  labels: %s
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        %s: %s
    spec:
      restartPolicy: Never
      nodeSelector:
        g8s.host/pool: training-pool
      containers:
        - name: main
          image: registry.example.com/train:v1
          resources:
            limits:
              nvidia.com/gpu: %d
`, name, labels, testcluster.RunForAnnotation, runFor, gpus))
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

func clients(t testing.TB) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	cfg := testcluster.Current().RESTConfig()
	return kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
}

// workload is what the tests read of a Kueue Workload.
type workload struct {
	job       string // the owning Job
	reserved  bool   // QuotaReserved is True
	finished  bool
	preempted bool // preempted at some point
	message   string
}

// workloads lists the Workloads of a namespace by the name of their Job.
func workloads(ctx context.Context, dyn dynamic.Interface, ns string) (map[string]workload, error) {
	list, err := dyn.Resource(workloadsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]workload{}
	for _, u := range list.Items {
		w := workloadOf(&u)
		if w.job != "" {
			out[w.job] = w
		}
	}
	return out, nil
}

func workloadOf(u *unstructured.Unstructured) workload {
	var w workload
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == "Job" {
			w.job = o.Name
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, status, reason, msg := m["type"], m["status"], m["reason"], m["message"]
		switch {
		case typ == "QuotaReserved" && status == "True":
			w.reserved = true
		case typ == "QuotaReserved":
			w.message, _ = msg.(string)
		case typ == "Finished" && status == "True":
			w.finished = true
		case typ == "Preempted", reason == "Preempted":
			// Evicted (reason Preempted) while it waits; then Preempted and Requeued (reason
			// Preempted) stay after it is admitted again.
			w.preempted = true
		}
	}
	return w
}

// poll calls cond every 100 ms until it is true, or fails the test after a minute.
func poll(t testing.TB, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil && ctx.Err() == nil {
			t.Logf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// noQuotaRefusals fails the test if a pod of the namespace was ever refused (a FailedCreate
// event of a Job: the ResourceQuota's "exceeded quota").
func noQuotaRefusals(t testing.TB, client kubernetes.Interface, ns string) {
	t.Helper()
	evs, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == "FailedCreate" {
			t.Errorf("a pod of %s was refused: %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// podsOf lists the pods of a Job.
func podsOf(ctx context.Context, client kubernetes.Interface, ns, job string) ([]corev1.Pod, error) {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// emptyTeam removes the team's files, syncs (the engine prunes its Jobs) and waits until the
// namespace holds no pod and no Workload.
func (r *repo) emptyTeam(team string) {
	r.t.Helper()
	r.remove("teams/" + team)
	r.sync()
	client, dyn := clients(r.t)
	poll(r.t, "namespace "+team+" to be empty", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(team).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ws, err := workloads(ctx, dyn, team)
		return len(pods.Items) == 0 && len(ws) == 0, err
	})
}
