package httpapi

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The job page over the fake clientset, whose logs are "fake logs"; test/e2e reads real lines,
// hostile ones included, through the local cluster.

// jobPage GETs a job's page with Basic authentication and wants the code.
func jobPage(t *testing.T, h http.Handler, path string, code int) string {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.SetBasicAuth("anyone", userToken)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != code {
		t.Fatalf("GET %s: code %d, want %d; body %s", path, w.Code, code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	if csp := w.Header().Get("Content-Security-Policy"); csp != uiCSP {
		t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
	}
	return w.Body.String()
}

func TestPageListsJobs(t *testing.T) {
	h, _ := testServer(t)
	body := okPage(t, h)
	rows := regexp.MustCompile(`(?s)<tr class="job-row" data-job="([^"]*)">.*?</tr>`).FindAllStringSubmatch(body, -1)
	var ids []string
	for _, r := range rows {
		ids = append(ids, r[1])
		if !strings.Contains(r[0], `<a class="job-link" href="/jobs/`+r[1]+`">`) {
			t.Errorf("row of %s does not link to its page:\n%s", r[1], r[0])
		}
	}
	if got := strings.Join(ids, " "); got != "alice.nb alice.old alice.sft bob.failed-run bob.llm bob.web" {
		t.Errorf("jobs listed: %s", got)
	}
	sft := rows[2][0]
	for _, want := range []string{">sft</a>", "<td>alice</td>", "<td>training</td>", `badge-ok">Running</span>`,
		`<td class="num">4</td>`, "<td>training-pool</td>", "ago</time>"} {
		if !strings.Contains(sft, want) {
			t.Errorf("the row of alice.sft lacks %s:\n%s", want, sft)
		}
	}
	if !strings.Contains(body, `badge-bad">Failed</span>`) || !strings.Contains(body, `badge-warn">Pending</span>`) {
		t.Error("failed and pending jobs are not coloured")
	}
}

// pendingPod is a pod of alice.sft that the scheduler cannot place.
func pendingPod(name string) *corev1.Pod {
	p := clusterfixture.Pod("alice", name, "sft", "", corev1.PodPending, 4, nil)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}
	return p
}

// podEvent is an event about a pod of alice.
func podEvent(name, pod, reason, msg string, at time.Time) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "alice"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "alice", Name: pod},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: msg, Count: 3,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at)}
}

func TestJobPage(t *testing.T) {
	objs := append(clusterfixture.Objects(), startedPod("sft-run"), pendingPod("sft-wait"),
		podEvent("e1", "sft-wait", "FailedScheduling", "0/4 nodes are available", time.Now().Add(-time.Minute)))
	h, _ := testServer(t, objs...)
	body := jobPage(t, h, "/jobs/alice.sft", http.StatusOK)
	for _, want := range []string{
		`<title>alice.sft · Running · gpuctl</title>`,
		`<h2 id="job-name">sft</h2>`,
		`<span id="job-status"><span class="badge status badge-ok">Running</span></span>`,
		"<p>qwen2 sft</p>",
		"<code>teams/alice/sft.yaml</code>",
		"4 GPUs",
		"a100-80g",
		"<code>Job/sft</code>",
		`<a href="/">← all jobs</a>`,
		// The events: the scheduler's, with its count.
		"FailedScheduling", "(×3)",
		// The logs: the started pod's lines, shared among the job's 3 pods.
		"last 66 lines of each of 3 pods",
		`<pre id="log-lines" class="log">[sft-run] fake logs` + "\n</pre>",
		"gpuctl logs -f alice.sft",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %s", want)
		}
	}
	pods := regexp.MustCompile(`(?s)<tr class="pod-row">.*?</tr>`).FindAllString(body, -1)
	if len(pods) != 3 {
		t.Fatalf("%d pod rows, want 3:\n%s", len(pods), strings.Join(pods, "\n"))
	}
	for i, want := range [][]string{
		{"sft-abcde", "Running", "gpu-1"},
		{"sft-run", "Running", `<td class="num">0/1</td>`},
		{"sft-wait", `badge-warn">Pending`, "0/4 nodes: insufficient nvidia.com/gpu", "<td>—</td>"},
	} {
		for _, w := range want {
			if !strings.Contains(pods[i], w) {
				t.Errorf("pod row %d lacks %s:\n%s", i, w, pods[i])
			}
		}
	}

	// A bare name finds the job; its page says its canonical id.
	if body := jobPage(t, h, "/jobs/sft", http.StatusOK); !strings.Contains(body, "<code>alice.sft</code>") {
		t.Error("the page of a bare name does not show the job id")
	}
	// A job without pods: no log yet, said so.
	body = jobPage(t, h, "/jobs/alice.nb", http.StatusOK)
	for _, want := range []string{"No pods yet.", "No log yet: job alice.nb has no pods yet (status Pending).", "No events"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page of alice.nb lacks %q", want)
		}
	}
}

func TestJobPageErrors(t *testing.T) {
	h, _ := testServer(t)
	body := jobPage(t, h, "/jobs/alice.nope", http.StatusNotFound)
	if !strings.Contains(body, "<b>Job unavailable:</b> unknown job &#34;alice.nope&#34;") {
		t.Errorf("404 page:\n%s", body)
	}
	// The same authentication as the overview.
	for _, auth := range []string{"", "Bearer nope", "Basic " + basic("x", "nope")} {
		w := getPage(t, h, "/jobs/alice.sft", auth)
		if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "sft") {
			t.Errorf("%q: code %d, body %s", auth, w.Code, w.Body)
		}
	}
	if w := getPage(t, h, "/jobs/alice.sft", "Bearer "+adminToken); w.Code != http.StatusOK {
		t.Errorf("bearer: code %d", w.Code)
	}
	// Without a cluster client: a 500 page that says why.
	h = New(Options{Backend: &fakeBackend{}, Tokens: testTokens})
	if body := jobPage(t, h, "/jobs/alice.sft", http.StatusInternalServerError); !strings.Contains(body, errNoKube.Error()) {
		t.Errorf("500 page:\n%s", body)
	}
}

// Names, reasons and messages from the cluster are text: a pod name, a container's waiting
// reason, an event message or a job id in the path never become markup.
func TestJobPageEscapes(t *testing.T) {
	evil := `x"><script>alert(1)</script>`
	pod := startedPod(evil)
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: `<img src=x onerror=alert(2)>`, Message: `</td></tr></table><b>mallory</b>`}}
	objs := []runtime.Object{pod, podEvent("e1", evil, `<i>Reason</i>`, `<iframe src="javascript:alert(3)">`, time.Now())}
	h, _ := testServer(t, append(clusterfixture.Objects(), objs...)...)
	for _, path := range []string{"/jobs/alice.sft", "/jobs/" + "alice.%3Cscript%3Ealert(1)%3C%2Fscript%3E", "/"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.SetBasicAuth("anyone", userToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		body := w.Body.String()
		for _, raw := range []string{"<script", "<img", "<b>mallory", "<iframe", "<i>Reason"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s (%d) contains unescaped %q", path, w.Code, raw)
			}
		}
	}
	body := jobPage(t, h, "/jobs/alice.sft", http.StatusOK)
	for _, want := range []string{"x&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;",
		"&lt;iframe src=&#34;javascript:alert(3)&#34;&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks the escaped %s", want)
		}
	}
}

func TestPodWords(t *testing.T) {
	waiting := func(reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	tests := map[string]struct {
		pod        func(p *corev1.Pod)
		status     string
		why, ready string
		restarts   int32
	}{
		"running and ready": {func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Ready: true}}
		}, "Running", "", "1/1", 0},
		"crash loop": {func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 5,
				State: waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container")}}
		}, "CrashLoopBackOff", "back-off 5m0s restarting failed container", "0/1", 5},
		"image pull": {func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: waiting("ImagePullBackOff", "")}}
		}, "ImagePullBackOff", "the image cannot be pulled", "0/1", 0},
		"out of memory": {func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
		}, "OOMKilled", "out of memory: raise resources.memory; exit code 137", "0/1", 0},
		"evicted": {func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		}, "Evicted", "The node was low on resource: memory.", "0/1", 0},
		"unschedulable": {func(p *corev1.Pod) { *p = *pendingPod(p.Name) }, "Pending",
			"0/4 nodes: insufficient nvidia.com/gpu", "0/1", 0},
		"terminating": {func(p *corev1.Pod) { p.DeletionTimestamp = clusterfixture.At(0) }, "Terminating", "", "0/1", 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := clusterfixture.Pod("alice", "p", "sft", "gpu-1", corev1.PodRunning, 1, nil)
			tc.pod(p)
			// the page shows a pod as gpuctl get jobs does (cluster.PodStatus, PodReason)
			status, why := cluster.PodStatus(p), cluster.PodReason(p)
			if status != tc.status || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
				t.Errorf("got status %q, why %q; want status %q, why containing %q", status, why, tc.status, tc.why)
			}
		})
	}
	for status, class := range map[string]string{"Running": "ok", "Succeeded": "ok", "Partially Running": "warn",
		"CrashLoopBackOff": "bad", "ImagePullBackOff": "bad", "OOMKilled": "bad", "Unknown": "neutral"} {
		if got := statusClass(status); got != class {
			t.Errorf("statusClass(%s) = %s, want %s", status, got, class)
		}
	}
}

// TestJobPageSaysWhyItEnded: the page of a failed training Job says why in words, and lists
// its attempts with their exit codes.
func TestJobPageSaysWhyItEnded(t *testing.T) {
	pod := clusterfixture.Pod("bob", "failed-run-abcde", "failed-run", "gpu-1", corev1.PodFailed, 0, clusterfixture.At(time.Minute))
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: *clusterfixture.At(2 * time.Minute)}}}}
	h, _ := testServer(t, append(clusterfixture.Objects(), pod)...)
	body := jobPage(t, h, "/jobs/bob.failed-run", http.StatusOK)
	if !regexp.MustCompile(`<div id="job-reason"><dt>Why</dt><dd>Error: exit code 1</dd></div>`).MatchString(body) {
		t.Errorf("no reason on the page:\n%s", body)
	}
	row := regexp.MustCompile(`(?s)<tr class="attempt-row">.*?</tr>`).FindString(body)
	for _, want := range []string{"failed-run-abcde", "gpu-1", "Failed", `<td class="num">1</td>`, "Error: exit code 1"} {
		if !strings.Contains(row, want) {
			t.Errorf("the attempt row lacks %s:\n%s", want, row)
		}
	}
}

// TestJobPageNamesTheWorkerCluster: the job page of a job that Kueue's MultiKueue runs in a
// worker cluster says where (the read model's queue.cluster), as describe job does; one sent to
// workers that none admitted yet names them; a worker's copy says whose it is; a job of this
// cluster says nothing of it.
func TestJobPageNamesTheWorkerCluster(t *testing.T) {
	page := func(q *cluster.QueueState) string {
		var b strings.Builder
		j := cluster.JobDetail{JobID: "alice.train", Name: "train", Namespace: "alice", Kind: "training", Status: cluster.StatusRunning, Queue: q}
		if err := jobSection(time.Now(), j).Render(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	cases := map[string]struct {
		q    *cluster.QueueState
		want string
	}{
		"runs in a worker": {&cluster.QueueState{ClusterQueue: "alice", State: cluster.QueueAdmitted, Cluster: "gpu-b"},
			`<div id="job-cluster"><dt>Cluster</dt><dd>Runs on cluster gpu-b (MultiKueue)</dd></div>`},
		"sent, not admitted": {&cluster.QueueState{ClusterQueue: "alice", State: cluster.QueueReserved, Nominated: []string{"gpu-a", "gpu-b"}},
			`<dd>Sent to gpu-a, gpu-b by MultiKueue, admitted by none yet</dd>`},
		"a worker's copy": {&cluster.QueueState{ClusterQueue: "alice", State: cluster.QueueAdmitted, Origin: "multikueue"},
			`<dd>A copy of a manager cluster&#39;s job, dispatched by MultiKueue (origin multikueue)</dd>`},
	}
	for name, c := range cases {
		if got := page(c.q); !strings.Contains(got, c.want) {
			t.Errorf("%s: the job section lacks %s:\n%s", name, c.want, got)
		}
	}
	for _, q := range []*cluster.QueueState{nil, {ClusterQueue: "alice", State: cluster.QueueAdmitted}} {
		if got := page(q); strings.Contains(got, "job-cluster") || strings.Contains(got, "MultiKueue") {
			t.Errorf("a job of this cluster (queue %+v) names a cluster:\n%s", q, got)
		}
	}
}
