package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// update rewrites the golden files of testdata/get instead of comparing with them.
var update = flag.Bool("update", false, "rewrite the golden files of testdata/get")

// getNamespace is the namespace of the jobs of TestGetAndDescribe.
const getNamespace = "get-e2e"

// getWorkload labels and annotates a template's workload as render does; pool and source show
// in -o wide.
func getWorkload(name, kind string, gpus int64, nodeSelector map[string]string) (metav1.ObjectMeta, corev1.PodTemplateSpec) {
	tmpl := gpuTemplate(name, kind, gpus)
	tmpl.Labels[keys.Pool] = "training-pool"
	tmpl.Spec.NodeSelector = nodeSelector
	meta := metav1.ObjectMeta{Name: name, Namespace: getNamespace, Labels: tmpl.Labels,
		Annotations: map[string]string{keys.Source: "teams/" + getNamespace + "/" + name + ".yaml"}}
	return meta, tmpl
}

var (
	onT4  = map[string]string{keys.GPUType: "t4-16g"}
	onCPU = map[string]string{"kubernetes.io/hostname": "cpu-0"}
)

// createJob creates a training Job of pods × gpus (indexed when pods > 1); edit changes it
// before.
func createJob(t *testing.T, kube kubernetes.Interface, name string, pods int32, gpus int64, nodes map[string]string, edit func(*batchv1.Job)) {
	t.Helper()
	meta, tmpl := getWorkload(name, "training", gpus, nodes)
	job := &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Parallelism: &pods, Completions: &pods,
		Template: tmpl, BackoffLimit: new(int32)}}
	if pods > 1 {
		mode := batchv1.IndexedCompletion
		job.Spec.CompletionMode = &mode
	}
	if edit != nil {
		edit(job)
	}
	if _, err := kube.BatchV1().Jobs(getNamespace).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createDeployment creates an inference Deployment of one replica.
func createDeployment(t *testing.T, kube kubernetes.Interface, name string, gpus int64, nodes map[string]string) {
	t.Helper()
	meta, tmpl := getWorkload(name, "inference", gpus, nodes)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: &one, Template: tmpl,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: name}}}}
	if _, err := kube.AppsV1().Deployments(getNamespace).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// crashLoop sets the status of the pod as a kubelet does for a container that keeps exiting.
func crashLoop(t *testing.T, kube kubernetes.Interface, pod corev1.Pod) {
	t.Helper()
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: pod.Spec.Containers[0].Image, RestartCount: 4,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: "back-off 1m20s restarting failed container=main"}}}}
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			pod.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	if _, err := kube.CoreV1().Pods(pod.Namespace).UpdateStatus(t.Context(), &pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantRows is the status of the rows of each job when the jobs have settled.
var wantRows = map[string][]string{
	"crashy": {"CrashLoopBackOff"},
	"done":   {"Completed"},
	"multi":  {"Completed", "Completed"},
	"oom":    {"OOMKilled"},
	"queued": {"Pending"},
	"serve":  {"Running"},
	"huge":   {"Pending"},
}

// settled reports whether the rows are those of wantRows, with the scheduler's reason of the
// pod that no node can take.
func settled(list cluster.JobPodList) bool {
	got := map[string][]string{}
	for _, r := range list.Items {
		if r.Name == "huge" && !strings.Contains(r.Reason, "insufficient nvidia.com/gpu") {
			return false
		}
		if r.Name == "crashy" && r.JobStatus != cluster.StatusPending || r.Name == "multi" && r.JobStatus != cluster.StatusSucceeded {
			return false
		}
		got[r.Name] = append(got[r.Name], r.Status)
	}
	if len(got) != len(wantRows) {
		return false
	}
	for name, want := range wantRows {
		if strings.Join(got[name], ",") != strings.Join(want, ",") {
			return false
		}
	}
	return true
}

// TestGetAndDescribe: gpuctl get jobs and describe job over jobs in each state — pending for
// lack of GPUs, running, crash-looping, failed (OOMKilled), succeeded, a multi-node indexed
// Job, a suspended job with no pod — in text, wide and JSON against golden files (with pod
// names, IPs, times and ages normalised); filters; watch; get and describe of pools, nodes
// and quotas; exit codes.
func TestGetAndDescribe(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	// multi (2 × 1) and serve (1) run on gpu-t4-0's 4 GPUs: pods of earlier tests must have
	// left them (a pod that waits for them would make the golden tables wait too).
	var holders []string
	defer func() {
		if t.Failed() && holders != nil {
			t.Logf("gpu-t4-0's GPUs were held by %v", holders)
		}
	}()
	waitUntilFor(t, "3 free GPUs on gpu-t4-0", time.Minute, func(ctx context.Context) bool {
		held, pods, err := gpusHeld(ctx, kube, "gpu-t4-0", "")
		holders = pods
		return err == nil && held <= 1
	})
	holders = nil
	ns := logsNamespace(t, kube, getNamespace)
	hard := corev1.ResourceList{keys.QuotaRequestsGPU: resource.MustParse("100")}
	if _, err := kube.CoreV1().ResourceQuotas(ns).Create(t.Context(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "team-quota", Labels: map[string]string{keys.Quota: "team-quota", keys.ManagedBy: keys.ManagedByValue}},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quotaComputed(t, kube, ns, "team-quota")
	createJob(t, kube, "huge", 1, 64, nil, nil)
	createJob(t, kube, "done", 1, 0, onCPU, nil)
	createJob(t, kube, "oom", 1, 0, onCPU, func(j *batchv1.Job) { testcluster.FailingPod(&j.Spec.Template, "OOMKilled", 137) })
	createJob(t, kube, "multi", 2, 1, onT4, nil)
	createJob(t, kube, "queued", 1, 8, nil, func(j *batchv1.Job) { j.Spec.Suspend = new(bool); *j.Spec.Suspend = true })
	createDeployment(t, kube, "serve", 1, onT4)
	createDeployment(t, kube, "crashy", 0, onCPU)
	crashLoop(t, kube, startedPods(t, kube, ns, "crashy", 1)[0])

	var list cluster.JobPodList
	var table string
	defer func() {
		if t.Failed() {
			t.Logf("the last get jobs:\n%s", table)
		}
	}()
	// 90 s: a crash loop and a pod that no node takes settle within seconds on an idle machine,
	// but make test runs two packages at once on 2 cores, and kwok's restarts and the
	// scheduler's retries then come later (this wait once ran out at 30 s).
	waitUntilFor(t, "the jobs to settle", 90*time.Second, func(context.Context) bool {
		out, _, code := gpuctl(t, "get", "jobs", "-n", ns, "-o", "json")
		list = cluster.JobPodList{}
		ok := code == 0 && json.Unmarshal([]byte(out), &list) == nil && settled(list)
		if !ok {
			table, _, _ = gpuctl(t, "get", "jobs", "-n", ns, "-o", "wide")
		}
		return ok
	})

	for _, tc := range []struct{ golden, args string }{
		{"jobs.txt", ""}, {"jobs-wide.txt", "-o wide"},
	} {
		out, errOut, code := gpuctl(t, append([]string{"get", "jobs", "-n", ns}, strings.Fields(tc.args)...)...)
		if code != 0 {
			t.Fatalf("get jobs %s: exit %d: %s", tc.args, code, errOut)
		}
		golden(t, tc.golden, normalizeTable(out, 8))
	}
	out, _, _ := gpuctl(t, "get", "jobs", "-n", ns, "-o", "json")
	golden(t, "jobs.json", normalize(out))

	// The kubeconfig's context names no namespace: get jobs reads "default", like kubectl
	// (other tests of the package may have jobs there: every row is default's).
	if out, errOut, code := gpuctl(t, "get", "jobs", "--kind", "notebook"); code != 0 || (out == "" && errOut != "No jobs found in namespace default.\n") {
		t.Errorf("get jobs in the default namespace: exit %d\n%s%s", code, out, errOut)
	} else if out != "" {
		for _, row := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			if f := strings.Fields(row); len(f) < 3 || f[2] != "default" {
				t.Errorf("get jobs without -n shows a row of another namespace: %q", row)
			}
		}
	}
	if out, _, _ := gpuctl(t, "get", "jobs", "-A", "--status", "oomkilled"); !strings.Contains(out, " oom ") || strings.Count(out, "\n") != 2 {
		t.Errorf("get jobs -A --status oomkilled:\n%s", out)
	}
	if out, _, _ := gpuctl(t, "get", "jobs", "-n", ns, "--status", "pending", "-o", "name"); out != ns+".huge\n"+ns+".queued\n" {
		t.Errorf("--status pending -o name:\n%s", out)
	}
	if out, _, _ := gpuctl(t, "get", "jobs", "-n", ns, "--kind", "inference", "-l", "app=serve", "-o", "name"); out != ns+".serve\n" {
		t.Errorf("--kind inference -l app=serve:\n%s", out)
	}
	if _, errOut, code := gpuctl(t, "get", "jobs", "-n", ns, "--kind", "batch"); code != app.ExitTrouble || !strings.Contains(errOut, "kind: want one of") {
		t.Errorf("--kind batch: exit %d %s", code, errOut)
	}

	// describe job: the status with the scheduler's reason, the applied revision and the
	// job's drift items from the daemon's ConfigMaps.
	writeDaemonState(t, kube)
	out, errOut, code := gpuctl(t, "describe", "job", "huge")
	if code != 0 {
		t.Fatalf("describe job: exit %d: %s", code, errOut)
	}
	golden(t, "describe-job.txt", normalizeDescribe(out))
	if out, _, _ := gpuctl(t, "describe", "job", "oom", "-n", ns); !strings.Contains(out, "container main: out of memory: raise resources.memory; exit code 137") {
		t.Errorf("describe job oom:\n%s", out)
	}
	if out, _, _ := gpuctl(t, "describe", "job", ns+".multi"); !strings.Contains(out, "(rank 1)") || !strings.Contains(out, "1 GPU (t4-16g) per pod × 2 pods = 2 GPUs") {
		t.Errorf("describe job multi:\n%s", out)
	}
	var d cluster.JobDescription
	out, _, _ = gpuctl(t, "describe", "job", "queued", "-o", "json")
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Job.JobID != ns+".queued" || len(d.Pods) != 1 || d.Pods[0].Reason != "suspended" {
		t.Errorf("describe job queued -o json: %v\n%s", err, out)
	}
	if _, errOut, code := gpuctl(t, "describe", "job", "nowhere"); code != app.ExitFailed || !strings.Contains(errOut, `unknown job "nowhere"`) {
		t.Errorf("an unknown job: exit %d %s", code, errOut)
	}
	other := logsNamespace(t, kube, getNamespace+"-other")
	trainingJob(t, kube, other, "done", 1, 0, true)
	if _, errOut, code := gpuctl(t, "describe", "job", "done"); code != app.ExitTrouble || !strings.Contains(errOut, "use one of get-e2e.done, get-e2e-other.done") {
		t.Errorf("an ambiguous job: exit %d %s", code, errOut)
	}

	// Pools, nodes, quotas.
	if out, _, _ := gpuctl(t, "get", "nodes", "--gpu-type", "t4-16g"); !regexp.MustCompile(`(?m)^gpu-t4-0 +\S+ +t4-16g +4 +[1-4] +Ready$`).MatchString(out) {
		t.Errorf("get nodes --gpu-type t4-16g (serve's GPU in use):\n%s", out)
	}
	var t4 cluster.NodeDetail
	out, _, _ = gpuctl(t, "describe", "node", "gpu-t4-0", "-o", "json")
	if err := json.Unmarshal([]byte(out), &t4); err != nil || t4.Pool == "" {
		t.Fatalf("describe node -o json: %v\n%s", err, out)
	}
	if out, _, _ := gpuctl(t, "get", "nodes", "-o", "wide"); !strings.Contains(out, "g8s.host/gpu-type=t4-16g") {
		t.Errorf("get nodes -o wide:\n%s", out)
	}
	if out, _, _ := gpuctl(t, "describe", "node", "gpu-t4-0"); !regexp.MustCompile(`(?m)^  get-e2e +serve-\S+ +get-e2e\.serve +1 +Running$`).MatchString(out) {
		t.Errorf("describe node gpu-t4-0:\n%s", out)
	}
	if out, _, _ := gpuctl(t, "get", "pools"); !regexp.MustCompile(`(?m)^NAME +NODES +GPU TYPE +GPUS +USED +FREE$`).MatchString(out) || !strings.Contains(out, "default") {
		t.Errorf("get pools:\n%s", out)
	}
	if out, _, _ := gpuctl(t, "describe", "pool", t4.Pool); !regexp.MustCompile(`(?m)^  gpu-t4-0 +t4-16g +4 +[1-4] +[0-3] +Ready$`).MatchString(out) {
		t.Errorf("describe pool %s:\n%s", t4.Pool, out)
	}
	if _, _, code := gpuctl(t, "describe", "pool", "nowhere"); code != app.ExitFailed {
		t.Errorf("an unknown pool: exit %d", code)
	}
	waitUntil(t, "the quota's use", func(context.Context) bool {
		out, _, _ := gpuctl(t, "get", "quotas", ns, "-o", "wide")
		return regexp.MustCompile(`(?m)^get-e2e +65/100 +<none> +<none> +\[#######---\] 65%$`).MatchString(out)
	})
	if out, _, _ := gpuctl(t, "describe", "quota", ns); !regexp.MustCompile(`(?m)^  get-e2e\.huge +1 +64 `).MatchString(out) {
		t.Errorf("describe quota:\n%s", out)
	}
}

// TestGetJobsWatch: -w prints the table, then the row of a job that appears, until interrupted.
func TestGetJobsWatch(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	ns := logsNamespace(t, kube, "get-e2e-watch")
	trainingJob(t, kube, ns, "first", 1, 0, true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, errOut, done := gpuctlUntil(ctx, "get", "jobs", "-n", ns, "-w")
	waitUntil(t, "the first table", func(context.Context) bool { return strings.Contains(out.String(), " first ") })
	if !strings.HasPrefix(out.String(), "JOB ID ") {
		t.Errorf("no header:\n%s", out.String())
	}
	trainingJob(t, kube, ns, "second", 1, 0, true)
	waitUntil(t, "the row of a new job", func(context.Context) bool { return strings.Contains(out.String(), " second ") })
	if !regexp.MustCompile(`(?m)^<none> +second .* Pending \(suspended\) `).MatchString(out.String()) || strings.Count(out.String(), " first ") != 1 {
		t.Errorf("watch printed:\n%s", out.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("get jobs -w ended with exit %d: %s", code, errOut.String())
	}
}

// writeDaemonState writes the status and drift ConfigMaps of a daemon that applied a revision
// and found the Job huge modified by kubectl, and deletes them after the test.
func writeDaemonState(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	st := daemon.NewStore(kube, keys.SystemNamespace)
	if err := st.Write(t.Context(), daemon.Status{Result: daemon.ResultSucceeded, Revision: "4f9c2a71d0e8b3c5a6f7", AppliedRevision: "4f9c2a71d0e8b3c5a6f7"}); err != nil {
		t.Fatal(err)
	}
	item := drift.Item{Object: object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: getNamespace, Name: "huge"},
		Category: drift.Modified, Source: "teams/get-e2e/huge.yaml", Message: "spec.template.spec.priorityClassName: gpuctl-high (Git: gpuctl-low)",
		Manager: "kubectl-edit", Detected: time.Now()}
	other := item
	other.Object.Name, other.Source = "elsewhere", "teams/get-e2e/elsewhere.yaml"
	if err := drift.NewStore(kube, keys.SystemNamespace).Write(t.Context(), drift.Report{Items: []drift.Item{item, other}}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{keys.StatusName, keys.DriftName} {
			_ = kube.CoreV1().ConfigMaps(keys.SystemNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
}

// golden compares got with testdata/get/name, or writes it there with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "get", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to rewrite it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

var (
	// podSuffix is the random end of a generated pod name, with a ReplicaSet's hash before it.
	podSuffix = regexp.MustCompile(`(-[bcdfghjklmnpqrstvwxz2456789]{6,10})?-[bcdfghjklmnpqrstvwxz2456789]{5}\b`)
	ipv4      = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
	rfc3339   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	age       = regexp.MustCompile(`\b\d+[smhdy]\b`)
	repeated  = regexp.MustCompile(`\b\d+[smhdy] \(x\d+ over \d+[smhdy]\)`)
	gap       = regexp.MustCompile(`\s{3,}`)
)

// normalize replaces what changes from run to run: pod name suffixes, IPs and timestamps.
func normalize(s string) string {
	s = podSuffix.ReplaceAllString(s, "-xxxxx")
	s = ipv4.ReplaceAllString(s, "10.244.0.1")
	return rfc3339.ReplaceAllString(s, "2025-01-01T00:00:00Z")
}

// normalizeTable normalizes a table's cells (its column ageCol to "1m") and aligns them again.
func normalizeTable(out string, ageCol int) string {
	return realign(normalize(out), func(row int, cells []string) {
		if row > 0 && ageCol < len(cells) {
			cells[ageCol] = "1m"
		}
	})
}

// normalizeDescribe normalizes describe's text, ages and repeated events' counts too, and
// keeps one of identical lines in a row (the scheduler repeats its event as it retries).
func normalizeDescribe(out string) string {
	out = age.ReplaceAllString(repeated.ReplaceAllString(normalize(out), "1m"), "1m")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if len(lines) == 0 || gap.ReplaceAllString(l, "   ") != gap.ReplaceAllString(lines[len(lines)-1], "   ") || strings.TrimSpace(l) == "" {
			lines = append(lines, l)
		}
	}
	return realign(strings.Join(lines, "\n"), nil)
}

// realign aligns again the columns of text whose cells were changed: each run of lines of
// the same indentation and number of cells (separated by three spaces or more) is a table,
// its columns as wide as their widest cell and three spaces. edit, when not nil, changes the
// cells of each line (row counts from 0).
func realign(text string, edit func(row int, cells []string)) string {
	type line struct {
		indent string
		cells  []string
	}
	var lines []line
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		trimmed := strings.TrimLeft(l, " ")
		cells := gap.Split(trimmed, -1)
		if edit != nil {
			edit(i, cells)
		}
		lines = append(lines, line{l[:len(l)-len(trimmed)], cells})
	}
	var sb strings.Builder
	for start := 0; start < len(lines); {
		end := start + 1
		for end < len(lines) && lines[end].indent == lines[start].indent && len(lines[end].cells) == len(lines[start].cells) {
			end++
		}
		widths := make([]int, len(lines[start].cells))
		for _, l := range lines[start:end] {
			for i, c := range l.cells {
				widths[i] = max(widths[i], len(c))
			}
		}
		for _, l := range lines[start:end] {
			sb.WriteString(l.indent)
			for i, c := range l.cells {
				sb.WriteString(c)
				if i < len(l.cells)-1 {
					sb.WriteString(strings.Repeat(" ", widths[i]-len(c)+3))
				}
			}
			sb.WriteByte('\n')
		}
		start = end
	}
	return sb.String()
}
