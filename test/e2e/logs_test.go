package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/syncbuf"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// gpuctl logs and gpuctl events against the local cluster: the lines go through the API
// server's pod-log path to kwok, which serves the files that testcluster.WritePodLog appends to.

// logsNamespace creates a namespace for one test, deleted after it.
func logsNamespace(t *testing.T, kube kubernetes.Interface, name string) string {
	t.Helper()
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	waitUntil(t, "ServiceAccount "+name+"/default", func(ctx context.Context) bool {
		_, err := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	return name
}

// gpuTemplate is the pod template of a gpuctl workload of a kind asking for gpus.
func gpuTemplate(name, kind string, gpus int64) corev1.PodTemplateSpec {
	l := map[string]string{keys.ManagedBy: keys.ManagedByValue, keys.JobType: kind, keys.App: name}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "registry.example/train:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
	}
}

// trainingJob creates a gpuctl training Job of pods × gpus; more than one pod makes it indexed,
// as render does for a multi-node training; edit changes its pod template first.
func trainingJob(t *testing.T, kube kubernetes.Interface, ns, name string, pods int32, gpus int64, suspend bool, edit ...func(*corev1.PodTemplateSpec)) {
	t.Helper()
	tmpl := gpuTemplate(name, "training", gpus)
	for _, e := range edit {
		e(&tmpl)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tmpl.Labels},
		Spec: batchv1.JobSpec{Parallelism: &pods, Completions: &pods, Template: tmpl, Suspend: &suspend,
			BackoffLimit: new(int32)},
	}
	if pods > 1 {
		mode := batchv1.IndexedCompletion
		job.Spec.CompletionMode = &mode
	}
	if _, err := kube.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// quotaComputed waits, for at most 30 s, until the status of quota name in ns is computed
// (clusterfixture.QuotaComputed).
func quotaComputed(t *testing.T, kube kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := clusterfixture.QuotaComputed(ctx, kube, ns, name); err != nil {
		t.Fatalf("waiting for the status of quota %s/%s: %v", ns, name, err)
	}
}

// startedPods waits until the job (selected by app=name) has n pods bound to a node and
// returns them by name.
func startedPods(t *testing.T, kube kubernetes.Interface, ns, name string, n int) []corev1.Pod {
	t.Helper()
	var pods, all []corev1.Pod
	defer func() {
		if t.Failed() { // why they did not start: their phase and the scheduler's word, and who holds GPUs
			for _, p := range all {
				t.Logf("pod %s: %s on %q %v", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.Conditions)
			}
			held, holders, _ := gpusHeld(context.Background(), kube, "", "")
			t.Logf("pods holding %d GPUs: %v", held, holders)
		}
	}()
	waitUntil(t, "pods of "+ns+"/"+name, func(ctx context.Context) bool {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: keys.App + "=" + name})
		if err != nil {
			return false
		}
		all = list.Items
		pods = pods[:0]
		for _, p := range list.Items {
			if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodPending {
				pods = append(pods, p)
			}
		}
		return len(pods) == n
	})
	return pods
}

func writeLog(t *testing.T, ns, pod string, lines ...string) {
	t.Helper()
	if err := testcluster.Current().WritePodLog(t.Context(), testcluster.LogTarget{Namespace: ns, Pod: pod, Container: "main"}, lines...); err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t testing.TB, what string, cond func(context.Context) bool) {
	t.Helper()
	waitUntilFor(t, what, 30*time.Second, cond)
}

// waitUntilFor is waitUntil with another timeout.
func waitUntilFor(t testing.TB, what string, timeout time.Duration, cond func(context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// api serves the daemon's API over the cluster and answers GET path with the token "tok".
func api(t *testing.T, kube kubernetes.Interface, path string) (int, string) {
	t.Helper()
	h := httpapi.New(httpapi.Options{Kube: kube, Tokens: oneToken{}, Registry: prometheus.NewRegistry()})
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer tok")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestLogsOfJobs(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	ns := logsNamespace(t, kube, "logs-e2e")

	// A single-pod job: its lines with the pod's name as prefix; --tail and --grep.
	trainingJob(t, kube, ns, "solo-sft", 1, 1, false)
	solo := startedPods(t, kube, ns, "solo-sft", 1)[0].Name
	writeLog(t, ns, solo, "epoch 1 loss 0.91", "epoch 2 loss 0.73", "saving checkpoint", "epoch 3 loss 0.52")
	out, errOut, code := gpuctl(t, "logs", "solo-sft")
	want := "[" + solo + "] epoch 1 loss 0.91\n[" + solo + "] epoch 2 loss 0.73\n[" + solo + "] saving checkpoint\n[" + solo + "] epoch 3 loss 0.52\n"
	if code != 0 || out != want {
		t.Fatalf("logs: exit %d\n%s\nwant\n%s%s", code, out, want, errOut)
	}
	if out, _, _ := gpuctl(t, "logs", "solo-sft", "-n", ns, "--tail", "2"); out != "["+solo+"] saving checkpoint\n["+solo+"] epoch 3 loss 0.52\n" {
		t.Errorf("--tail 2:\n%s", out)
	}
	out, _, _ = gpuctl(t, "logs", ns+".solo-sft", "--grep", "loss", "--tail", "-1")
	if strings.Count(out, "\n") != 3 || strings.Contains(out, "checkpoint") {
		t.Errorf("--grep loss:\n%s", out)
	}
	if code, body := api(t, kube, "/api/v1/jobs/"+ns+".solo-sft/logs?grep=loss&tail=-1"); code != http.StatusOK || body != out {
		t.Errorf("the API answers %d\n%s\nthe CLI printed\n%s", code, body, out)
	}

	// A multi-node training: one prefix per rank, rank 0 first.
	trainingJob(t, kube, ns, "multi-sft", 2, 8, false)
	pods := startedPods(t, kube, ns, "multi-sft", 2)
	for _, p := range pods {
		rank := p.Labels[batchv1.JobCompletionIndexAnnotation]
		writeLog(t, ns, p.Name, "rank "+rank+" ready", "rank "+rank+" step 1")
	}
	out, _, code = gpuctl(t, "logs", "multi-sft")
	want = "[rank-0] rank 0 ready\n[rank-0] rank 0 step 1\n[rank-1] rank 1 ready\n[rank-1] rank 1 step 1\n"
	if code != 0 || out != want {
		t.Errorf("multi-node logs: exit %d\n%s\nwant\n%s", code, out, want)
	}
	if code, body := api(t, kube, "/api/v1/jobs/multi-sft/logs?tail=-1"); code != http.StatusOK || body != want {
		t.Errorf("the API answers %d\n%s", code, body)
	}

	// A job with no pods yet: a clear message and exit 1.
	trainingJob(t, kube, ns, "queued-sft", 1, 1, true)
	_, errOut, code = gpuctl(t, "logs", "queued-sft")
	if code != app.ExitFailed || !strings.Contains(errOut, "job "+ns+".queued-sft has no pods yet (status Pending)") {
		t.Errorf("no pods: exit %d: %s", code, errOut)
	}
	if code, body := api(t, kube, "/api/v1/jobs/queued-sft/logs"); code != http.StatusNotFound || !strings.Contains(body, "has no pods yet") {
		t.Errorf("no pods, the API answers %d %s", code, body)
	}

	// A name two namespaces have: the error lists both.
	other := logsNamespace(t, kube, "logs-e2e-other")
	trainingJob(t, kube, other, "solo-sft", 1, 1, true)
	_, errOut, code = gpuctl(t, "logs", "solo-sft")
	if code != app.ExitTrouble || !strings.Contains(errOut, `job name "solo-sft" is ambiguous: use one of logs-e2e.solo-sft, logs-e2e-other.solo-sft`) {
		t.Errorf("ambiguous: exit %d: %s", code, errOut)
	}
}

// gpuctlUntil runs the CLI in the background until ctx ends (a command that streams, as
// Ctrl-C ends it), and sends its exit code on done.
func gpuctlUntil(ctx context.Context, args ...string) (out, errOut *syncbuf.Buffer, done <-chan int) {
	out, errOut = &syncbuf.Buffer{}, &syncbuf.Buffer{}
	codes := make(chan int, 1)
	go func() {
		cmd := app.NewRootCommand(app.Streams{Out: out, Err: errOut})
		cmd.SetArgs(append(args, "--kubeconfig", testcluster.Current().Kubeconfig))
		codes <- app.Code(cmd.ExecuteContext(ctx))
	}()
	return out, errOut, codes
}

// gpuctl logs -f shows a line within a second of the pod writing it, and picks up a pod that
// starts after it began; the API's follow streams the same lines.
func TestLogsFollow(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	ns := logsNamespace(t, kube, "logs-e2e-follow")
	replicas := int32(1)
	tmpl := gpuTemplate("follow-svc", "compute", 0)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "follow-svc", Namespace: ns, Labels: tmpl.Labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: "follow-svc"}}},
	}
	if _, err := kube.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := startedPods(t, kube, ns, "follow-svc", 1)[0].Name
	writeLog(t, ns, first, "serving on :8000")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, errOut, done := gpuctlUntil(ctx, "logs", ns+".follow-svc", "-f")
	apiLines := followAPI(t, ctx, kube, "/api/v1/jobs/"+ns+".follow-svc/logs?follow=true")
	seen := func(what, line string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !strings.Contains(out.String(), line) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: gpuctl logs -f did not print %q within %s:\n%s%s", what, line, within, out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	seen("the first line", "["+first+"] serving on :8000", 10*time.Second)
	writeLog(t, ns, first, "GET /healthz 200")
	seen("an appended line", "["+first+"] GET /healthz 200", time.Second)

	if _, err := kube.AppsV1().Deployments(ns).Patch(t.Context(), "follow-svc", types.MergePatchType,
		[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var second string
	for _, p := range startedPods(t, kube, ns, "follow-svc", 2) {
		if p.Name != first {
			second = p.Name
		}
	}
	writeLog(t, ns, second, "second replica up")
	seen("a pod that started later", "["+second+"] second replica up", 10*time.Second)

	want := map[string]bool{"[" + first + "] serving on :8000": true, "[" + first + "] GET /healthz 200": true,
		"[" + second + "] second replica up": true}
	for range want {
		select {
		case got := <-apiLines:
			if !want[got] {
				t.Errorf("the API streamed %q, which gpuctl logs -f did not print", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the API's follow streamed fewer lines than gpuctl logs -f:\n%s", out.String())
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("gpuctl logs -f ended with exit %d: %s", code, errOut.String())
	}
}

// followAPI streams the lines of the daemon's API for path until ctx ends.
func followAPI(t *testing.T, ctx context.Context, kube kubernetes.Interface, path string) <-chan string {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Kube: kube, Tokens: oneToken{}, Registry: prometheus.NewRegistry()}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := srv.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %v", path, resp, err)
	}
	lines := make(chan string, 100)
	go func() {
		defer resp.Body.Close()
		data := make([]byte, 0, 4096)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			data = append(data, buf[:n]...)
			for {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					break
				}
				lines <- string(data[:i])
				data = data[i+1:]
			}
			if err != nil {
				if err != io.EOF && ctx.Err() == nil {
					t.Errorf("the API's follow: %v", err)
				}
				return
			}
		}
	}()
	return lines
}

// Events of a job whose pod cannot be scheduled: the scheduler's FailedScheduling, in the CLI
// and the API alike.
func TestEventsOfAPendingJob(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	ns := logsNamespace(t, kube, "events-e2e")
	trainingJob(t, kube, ns, "too-big", 1, 64, false)
	var list cluster.EventList
	waitUntil(t, "FailedScheduling and the Job's own SuccessfulCreate of too-big", func(context.Context) bool {
		out, _, code := gpuctl(t, "events", ns+".too-big", "-o", "json")
		list = cluster.EventList{}
		// the Job controller records its event apart from the scheduler: either may come first
		return code == 0 && json.Unmarshal([]byte(out), &list) == nil && hasReason(list, "FailedScheduling") &&
			hasReason(list, "SuccessfulCreate")
	})
	for _, e := range list.Items {
		if e.Reason == "FailedScheduling" && (e.Type != "Warning" || !strings.HasPrefix(e.Object, "pod/too-big-") ||
			!strings.Contains(e.Message, "nvidia.com/gpu") || e.JobID != ns+".too-big") {
			t.Errorf("event %+v", e)
		}
	}
	out, _, code := gpuctl(t, "events", "too-big")
	if code != 0 || !strings.HasPrefix(out, "LAST SEEN") || !strings.Contains(out, "Warning") || !strings.Contains(out, "FailedScheduling") {
		t.Errorf("events: exit %d\n%s", code, out)
	}
	if out, _, _ := gpuctl(t, "events", "-A"); !strings.Contains(out, ns+" ") || !strings.HasPrefix(out, "NAMESPACE") {
		t.Errorf("events -A:\n%s", out)
	}
	code, body := api(t, kube, "/api/v1/jobs/"+ns+".too-big/events")
	var fromAPI cluster.EventList
	if err := json.Unmarshal([]byte(body), &fromAPI); code != http.StatusOK || err != nil || !hasReason(fromAPI, "FailedScheduling") {
		t.Errorf("the API answers %d %s", code, body)
	}
}

func hasReason(l cluster.EventList, reason string) bool {
	for _, e := range l.Items {
		if e.Reason == reason {
			return true
		}
	}
	return false
}
