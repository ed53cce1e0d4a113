package multikueue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The repository of the fleet: one .gpuctl.yaml makes hub the MultiKueue manager of gpu-a and
// gpu-b; each cluster has its quota for alice (the manager's is the sum of the workers'); the
// jobs are committed to the manager's directory.
const gpuctlYAML = `version: v0.1
queueing: kueue
namespaces:
  - path: teams/*/**
    namespace: $1
multiKueue:
  manager: hub
  workers:
    - name: gpu-a
    - name: gpu-b
`

func quota(gpus int) string {
	return fmt.Sprintf("kind: quota\nversion: v0.1\nmetadata: {name: teams}\nusers:\n  alice: {cpu: 64, memory: 256Gi, gpu: %d}\n", gpus)
}

// job is a plain Job of one pod of 4 GPUs that kwok keeps Running for an hour, labelled as
// gpuctl labels a training job (the read verbs list it as one).
func job(name string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %[1]s
  labels: {%[3]s: training}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {%[3]s: training}
      annotations:
        %[2]s: 1h
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: registry.example.com/train:v1
          resources:
            limits:
              nvidia.com/gpu: 4
`, name, testcluster.RunForAnnotation, keys.JobType)
}

var (
	workloadsGVR = schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: "workloads"}
	clustersGVR  = schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: "multikueueclusters"}
)

// fleet is the repository and a client of each cluster.
type fleet struct {
	t    *testing.T
	dir  string
	kube map[string]kubernetes.Interface
	dyn  map[string]dynamic.Interface
}

func newFleet(t *testing.T) *fleet {
	f := &fleet{t: t, dir: t.TempDir(), kube: map[string]kubernetes.Interface{}, dyn: map[string]dynamic.Interface{}}
	for name, c := range clusters {
		f.kube[name] = kubernetes.NewForConfigOrDie(c.RESTConfig())
		f.dyn[name] = dynamic.NewForConfigOrDie(c.RESTConfig())
	}
	f.write(".gpuctl.yaml", gpuctlYAML)
	f.write("clusters/hub/quotas.yaml", quota(8))
	f.write("clusters/gpu-a/quotas.yaml", quota(4))
	f.write("clusters/gpu-b/quotas.yaml", quota(4))
	return f
}

func (f *fleet) write(path, content string) {
	f.t.Helper()
	p := filepath.Join(f.dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fleet) remove(path string) {
	f.t.Helper()
	if err := os.Remove(filepath.Join(f.dir, path)); err != nil {
		f.t.Fatal(err)
	}
}

// sync runs `gpuctl sync --local --cluster NAME` of the repository against that cluster.
func (f *fleet) sync(cluster string) {
	f.t.Helper()
	out, errOut, code := gpuctl(f.t, cluster, "sync", "--local", f.dir, "--cluster", cluster, "--max-prune=100%", "--color", "never")
	if code != 0 || strings.Contains(out, "failed") {
		f.t.Fatalf("sync of %s: exit %d\n%s\n%s", cluster, code, out, errOut)
	}
}

// poll calls cond every 200 ms until it is true, or fails the test after 90 s (three control
// planes and three Kueues share 2 cores in CI).
func poll(t *testing.T, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	state := ""
	for {
		var ok bool
		if ok, state = cond(ctx); ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; %s", what, state)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// workerOf is the worker that runs a job of the manager: the clusterName of its Workload
// ("" while none admitted it).
func (f *fleet) workerOf(ctx context.Context, name string) (string, string) {
	list, err := f.dyn[hub].Resource(workloadsGVR).Namespace("alice").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err.Error()
	}
	var seen []string
	for _, w := range list.Items {
		for _, o := range w.GetOwnerReferences() {
			if o.Kind == "Job" && o.Name == name {
				c, _, _ := unstructured.NestedString(w.Object, "status", "clusterName")
				conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
				return c, fmt.Sprintf("workload %s: clusterName %q, conditions %v", w.GetName(), c, conds)
			}
		}
		seen = append(seen, w.GetName())
	}
	return "", fmt.Sprintf("no Workload of Job %s among %v", name, seen)
}

// running reports whether the Job of a cluster has a pod Running on that cluster's gpu-0.
func (f *fleet) running(ctx context.Context, cluster, name string) (bool, string) {
	pods, err := f.kube[cluster].CoreV1().Pods("alice").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
	if err != nil {
		return false, err.Error()
	}
	var states []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == "gpu-0" {
			return true, ""
		}
		states = append(states, p.Name+" "+string(p.Status.Phase))
	}
	return false, fmt.Sprintf("pods of %s in %s: %v", name, cluster, states)
}

// TestJobsGoWhereTheGPUsAre is the bar: worker gpu-a full (its quota held by a job of
// its own), gpu-b free → a 4-GPU job committed to the manager runs on gpu-b; once gpu-b is full
// and gpu-a frees, the next job goes to gpu-a. The manager runs no pod of either.
func TestJobsGoWhereTheGPUsAre(t *testing.T) {
	f := newFleet(t)
	for _, w := range []string{gpuA, gpuB} {
		kubeconfig, err := os.ReadFile(clusters[w].Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		// What the admin creates in the manager, never in Git: the worker's kubeconfig.
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: render.MultiKueueWorker{Name: w}.Secret(), Namespace: testcluster.KueueNamespace},
			Data: map[string][]byte{"kubeconfig": kubeconfig}}
		if _, err := f.kube[hub].CoreV1().Secrets(testcluster.KueueNamespace).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	f.write("clusters/gpu-a/teams/alice/fill.yaml", job("fill"))
	// gpu-b's own files hold a Job too (of no GPU), so that Jobs are kinds of its inventory,
	// which the prunes of its syncs list: MultiKueue's copy must be left alone by them.
	f.write("clusters/gpu-b/teams/alice/cpu-only.yaml", strings.Replace(strings.Replace(job("cpu-only"), "nvidia.com/gpu: 4", "cpu: 1", 1), "1h", "1s", 1))
	for _, c := range []string{gpuA, gpuB, hub} {
		f.sync(c)
	}
	// The attack on the workers' trust in MultiKueue's labels (keys.MultiKueueCopy: such a copy
	// is neither pruned nor a shadow): a team member forges them on a Job of their own in gpu-b.
	// Kueue runs a Job with a prebuilt-workload-name only under that Workload, which only the
	// manager makes: it never starts, and gpu-b's GPUs stay free for the manager's job.
	forged := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: "alice", Labels: map[string]string{
		keys.KueueQueueName: keys.KueueLocalQueue, keys.MultiKueueOrigin: "multikueue", keys.KueuePrebuiltWorkload: "job-forged-1a2b3"}},
		Spec: batchv1.JobSpec{Suspend: new(bool), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/mine:v1", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{keys.ResourceGPU: resource.MustParse("1")}}}}}}}}
	testcluster.RunFor(&forged.Spec.Template, time.Hour)
	if _, err := f.kube[gpuB].BatchV1().Jobs("alice").Create(t.Context(), forged, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "gpu-a's own job to run there", func(ctx context.Context) (bool, string) { return f.running(ctx, gpuA, "fill") })
	poll(t, "the manager's MultiKueueClusters to be active", func(ctx context.Context) (bool, string) {
		for _, w := range []string{gpuA, gpuB} {
			mc, err := f.dyn[hub].Resource(clustersGVR).Get(ctx, w, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(mc.Object, "status", "conditions")
			active := false
			for _, c := range conds {
				m, _ := c.(map[string]any)
				active = active || (m["type"] == "Active" && m["status"] == "True")
			}
			if !active {
				return false, fmt.Sprintf("MultiKueueCluster %s: %v", w, conds)
			}
		}
		return true, ""
	})

	logs, stopLogs := context.WithCancel(t.Context())
	defer stopLogs()
	go func() {
		_ = clusters[gpuB].ServeFakePodLogs(logs, testcluster.FakeLogsOptions{Namespaces: []string{"alice"}, Interval: 500 * time.Millisecond})
	}()
	f.write("clusters/hub/teams/alice/train-1.yaml", job("train-1"))
	f.sync(hub)
	poll(t, "train-1 to be admitted by gpu-b", func(ctx context.Context) (bool, string) {
		w, state := f.workerOf(ctx, "train-1")
		return w == gpuB, state
	})
	poll(t, "train-1 to run on gpu-b", func(ctx context.Context) (bool, string) { return f.running(ctx, gpuB, "train-1") })
	if pods, err := f.kube[gpuB].CoreV1().Pods("alice").List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=forged"}); err != nil || len(pods.Items) > 0 {
		t.Errorf("the Job with forged MultiKueue labels started %d pods in gpu-b (%v)", len(pods.Items), err)
	}
	// What the manager's read verbs say of it: the worker runs it (CLUSTER), and, with the
	// workers in the client's config, describe reads its pods there.
	out, errOut, code := gpuctl(t, hub, "get", "jobs", "-n", "alice")
	if code != 0 || !regexp.MustCompile(`(?m)^CLUSTER\s`).MatchString(out) || !regexp.MustCompile(`(?m)^gpu-b\s.*\btrain-1\s`).MatchString(out) {
		t.Errorf("get jobs on the manager: exit %d\n%s%s", code, out, errOut)
	}
	useConfig(t, fmt.Sprintf("clusters:\n  - name: gpu-a\n    context: %s\n    kubeconfig: %s\n  - name: gpu-b\n    context: %s\n    kubeconfig: %s\n",
		testcluster.ContextName, clusters[gpuA].Kubeconfig, testcluster.ContextName, clusters[gpuB].Kubeconfig))
	out, errOut, code = gpuctl(t, hub, "describe", "job", "train-1", "-n", "alice")
	if code != 0 || !strings.Contains(out, "cluster gpu-b (MultiKueue)") || !strings.Contains(out, "gpu-0") {
		t.Errorf("describe job on the manager: exit %d\n%s%s", code, out, errOut)
	}
	poll(t, "logs of train-1, read in gpu-b from the manager", func(context.Context) (bool, string) {
		out, errOut, code = gpuctl(t, hub, "logs", "train-1", "-n", "alice")
		return code == 0 && strings.Contains(out, "step"), fmt.Sprintf("exit %d\n%s%s", code, out, errOut)
	})

	// The worker's copy is the manager's job, not an object of the worker's files: its sync
	// neither prunes it nor takes it over.
	f.sync(gpuB)
	time.Sleep(2 * time.Second)
	if ok, state := f.running(t.Context(), gpuB, "train-1"); !ok {
		j, err := f.kube[gpuB].BatchV1().Jobs("alice").Get(t.Context(), "train-1", metav1.GetOptions{})
		t.Fatalf("after gpu-b's sync, train-1 no longer runs there: %s; job %v (err %v)", state, j.GetObjectMeta(), err)
	}

	// gpu-b is full now; gpu-a frees when its own job leaves its files.
	f.remove("clusters/gpu-a/teams/alice/fill.yaml")
	f.sync(gpuA)
	poll(t, "gpu-a's job to be gone", func(ctx context.Context) (bool, string) {
		_, err := f.kube[gpuA].BatchV1().Jobs("alice").Get(ctx, "fill", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get fill: %v", err)
	})
	f.write("clusters/hub/teams/alice/train-2.yaml", job("train-2"))
	f.sync(hub)
	poll(t, "train-2 to be admitted by gpu-a", func(ctx context.Context) (bool, string) {
		w, state := f.workerOf(ctx, "train-2")
		return w == gpuA, state
	})
	poll(t, "train-2 to run on gpu-a", func(ctx context.Context) (bool, string) { return f.running(ctx, gpuA, "train-2") })

	pods, err := f.kube[hub].CoreV1().Pods("alice").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > 0 {
		t.Errorf("the manager runs %d pods of alice; it should run none", len(pods.Items))
	}
	for _, c := range []string{gpuA, gpuB} {
		if _, err := f.kube[c].BatchV1().Jobs("alice").Get(t.Context(), map[string]string{gpuA: "train-1", gpuB: "train-2"}[c], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s still holds a copy of the job the other worker runs: %v", c, err)
		}
	}
}

// useConfig points the CLI's client config file ($XDG_CONFIG_HOME/gpuctl/config) at content
// for the rest of the test.
func useConfig(t *testing.T, content string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	if err := os.MkdirAll(filepath.Join(home, "gpuctl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "gpuctl", "config"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
