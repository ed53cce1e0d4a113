package queuestate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// The names of the test's queues: a flavor that no node has, so that an admitted job's pods
// wait for a node and hold their quota for as long as the test runs.
const (
	pool   = "qs-pool"
	cohort = "qs-cohort"
	alice  = "qs-alice"
	bob    = "qs-bob"
)

// kueue is Kueue's resource of a kind ("ClusterQueue" → clusterqueues).
func kueue(kind string) schema.GroupVersionResource {
	plural := strings.ToLower(kind) + "s"
	if strings.HasSuffix(kind, "Class") {
		plural = strings.ToLower(kind) + "es"
	}
	return schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: plural}
}

// apply server-side applies a Kueue object (namespace "" for a cluster-scoped one).
func apply(t *testing.T, dyn dynamic.Interface, kind, namespace, name string, fields map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(keys.KueueGroup + "/" + keys.KueueVersion)
	u.SetKind(kind)
	u.SetName(name)
	ri := dynamic.ResourceInterface(dyn.Resource(kueue(kind)))
	if namespace != "" {
		u.SetNamespace(namespace)
		ri = dyn.Resource(kueue(kind)).Namespace(namespace)
	}
	if _, err := ri.Apply(t.Context(), name, u, metav1.ApplyOptions{FieldManager: "queuestate-test", Force: true}); err != nil {
		t.Fatalf("apply %s %s: %v", kind, name, err)
	}
}

// clusterQueue is a team's ClusterQueue: 8 GPUs in the pool, lending at most lending.
func clusterQueue(team, lending string) map[string]any {
	gpu := map[string]any{"name": keys.ResourceGPU, "nominalQuota": "8"}
	if lending != "" {
		gpu["lendingLimit"] = lending
	}
	return map[string]any{"spec": map[string]any{
		"cohortName":        cohort,
		"queueingStrategy":  "BestEffortFIFO",
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: team}},
		"preemption":        map[string]any{"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", "memory", keys.ResourceGPU},
			"flavors": []any{map[string]any{"name": pool, "resources": []any{
				map[string]any{"name": "cpu", "nominalQuota": "64"},
				map[string]any{"name": "memory", "nominalQuota": "512Gi"},
				gpu,
			}}},
		}},
	}}
}

// setUpQueues creates the teams' namespaces, the flavor, gpuctl's WorkloadPriorityClasses,
// the ClusterQueues of alice and bob (bob lends at most 2 GPUs) and their LocalQueues.
func setUpQueues(t *testing.T, kube kubernetes.Interface, dyn dynamic.Interface) {
	createTeams(t, kube, dyn, alice, bob)
	apply(t, dyn, "ResourceFlavor", "", pool, map[string]any{"spec": map[string]any{"nodeLabels": map[string]any{keys.Pool: pool}}})
	for name, value := range map[string]int64{"gpuctl-high": 1000000, "gpuctl-medium": 500000, "gpuctl-low": 100} {
		apply(t, dyn, "WorkloadPriorityClass", "", name, map[string]any{"value": value})
	}
	apply(t, dyn, "ClusterQueue", "", alice, clusterQueue(alice, ""))
	apply(t, dyn, "ClusterQueue", "", bob, clusterQueue(bob, "2"))
	for _, ns := range []string{alice, bob} {
		apply(t, dyn, "LocalQueue", ns, keys.KueueLocalQueue, map[string]any{"spec": map[string]any{"clusterQueue": ns}})
	}
	waitFor(t, "the LocalQueues to be active", func(ctx context.Context) bool {
		for _, ns := range []string{alice, bob} {
			lq, err := dyn.Resource(kueue("LocalQueue")).Namespace(ns).Get(ctx, keys.KueueLocalQueue, metav1.GetOptions{})
			if err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(lq.Object, "status", "conditions")
			active := false
			for _, c := range conds {
				m, _ := c.(map[string]any)
				active = active || m["type"] == "Active" && m["status"] == "True"
			}
			if !active {
				return false
			}
		}
		return true
	})
}

// createTeams creates the teams' namespaces, and deletes them and their ClusterQueues when
// the test ends.
func createTeams(t *testing.T, kube kubernetes.Interface, dyn dynamic.Interface, teams ...string) {
	t.Helper()
	for _, ns := range teams {
		if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = dyn.Resource(kueue("ClusterQueue")).Delete(context.Background(), ns, metav1.DeleteOptions{})
			_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		})
	}
}

// trainingJob creates a gpuctl training Job as render writes it under Kueue: suspended, in
// the team's LocalQueue with a priority class, gpus GPUs of type a100-80g in the pool; each of
// change then changes it before it is created.
func trainingJob(t *testing.T, kube kubernetes.Interface, ns, name, priority string, gpus int64, change ...func(*batchv1.Job)) {
	t.Helper()
	l := map[string]string{keys.ManagedBy: keys.ManagedByValue, keys.JobType: "training", keys.App: name, keys.Pool: pool,
		keys.Priority: priority, keys.KueueQueueName: keys.KueueLocalQueue, keys.KueuePriorityClass: "gpuctl-" + priority}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	suspend, backoff := true, int32(0)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{keys.Source: "teams/" + ns + "/" + name + ".yaml"}},
		Spec: batchv1.JobSpec{Suspend: &suspend, BackoffLimit: &backoff, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: l},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector: map[string]string{keys.Pool: pool, keys.GPUType: "a100-80g"},
				Containers: []corev1.Container{{Name: "main", Image: "trainer:v1",
					Resources: corev1.ResourceRequirements{Requests: requests, Limits: corev1.ResourceList{keys.ResourceGPU: requests[keys.ResourceGPU]}}}}},
		}},
	}
	for _, ch := range change {
		ch(job)
	}
	if _, err := kube.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 200 ms for at most 60 s.
func waitFor(t *testing.T, what string, cond func(context.Context) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for !cond(ctx) {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// jobRows are the rows of a namespace's jobs by job name: the job's own row (no pod), else its
// first pod's.
func jobRows(ctx context.Context, m cluster.Model, ns string) (map[string]cluster.JobPod, error) {
	list, err := m.JobPods(ctx, cluster.JobPodFilter{Namespace: ns})
	if err != nil {
		return nil, err
	}
	out := map[string]cluster.JobPod{}
	for _, r := range list.Items {
		if _, ok := out[r.Name]; !ok {
			out[r.Name] = r
		}
	}
	return out, nil
}

// waitRows polls the rows of a namespace until ok accepts them, and returns them.
func waitRows(t *testing.T, m cluster.Model, ns, what string, ok func(map[string]cluster.JobPod) bool) map[string]cluster.JobPod {
	t.Helper()
	var rows map[string]cluster.JobPod
	var err error
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		if rows, err = jobRows(ctx, m, ns); err == nil && ok(rows) {
			return rows
		}
		select {
		case <-ctx.Done():
			b, _ := json.MarshalIndent(rows, "", "  ")
			t.Fatalf("timed out waiting for %s (err %v); rows:\n%s", what, err, b)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// state is a row's queue state, "" without one.
func state(r cluster.JobPod) string {
	if r.Queue == nil {
		return ""
	}
	return r.Queue.State
}

// cliRun runs the CLI in-process and returns its output, errors and exit code.
func cliRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := app.Run(t.Context(), app.Streams{Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

// gpuctl runs the CLI with the cluster's kubeconfig and wants exit 0.
func gpuctl(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := cliRun(t, append(args, "--kubeconfig", testcluster.Current().Kubeconfig)...)
	if code != 0 {
		t.Fatalf("gpuctl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// line is the line of out that contains all of words, or "".
func line(out string, words ...string) string {
	for _, l := range strings.Split(out, "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			return l
		}
	}
	return ""
}

// requestLog counts the requests other than watches that pass through a client's transport.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if w := r.URL.Query().Get("watch"); w != "true" && w != "1" {
			l.mu.Lock()
			l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
			l.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reqs
	l.reqs = nil
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// oneToken is a token source with one token, "tok", that sees every namespace.
type oneToken struct{}

func (oneToken) Lookup(t string) (httpapi.Principal, bool) {
	return httpapi.Principal{Name: "reader", AllNamespaces: true}, t == "tok"
}

// get GETs path from the handler with the token and wants 200.
func get(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer tok")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// The real Kueue queues alice's jobs beyond her 8 GPUs; the read model shows each one's place
// in Kueue's order and what it waits for (her use of her quota, the GPUs bob could lend), as
// get jobs, describe job, the daemon's informers (with no request per read), its API and its
// page show them; then alice borrows bob's GPUs, bob's own job reclaims them by preemption, and
// the preempted job names bob's job, except to alice's own scope.
func TestQueueStateOfRealKueue(t *testing.T) {
	c := testcluster.Current()
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	setUpQueues(t, kube, dyn)
	r := &cluster.Reader{Client: kube, Dynamic: dyn}

	trainingJob(t, kube, alice, "a1", "medium", 4)
	trainingJob(t, kube, alice, "a2", "medium", 4)
	waitRows(t, r, alice, "a1 and a2 to be admitted", func(rows map[string]cluster.JobPod) bool {
		return state(rows["a1"]) == cluster.QueueAdmitted && state(rows["a2"]) == cluster.QueueAdmitted
	})
	trainingJob(t, kube, alice, "a3", "low", 4)
	time.Sleep(1100 * time.Millisecond) // a later creation second: the order must come from the priority
	trainingJob(t, kube, alice, "a4", "high", 4)

	// Queued: a4 (high) before a3 (low, older); alice is at 8/8 and bob lends at most 2.
	wantA3 := "#2 in qs-alice: waits for 4 × a100-80g in qs-pool, team qs-alice at 8/8, cohort lending 2"
	rows := waitRows(t, r, alice, "a3 and a4 to be queued", func(rows map[string]cluster.JobPod) bool {
		return rows["a3"].Reason == wantA3 && rows["a4"].Queue.Waiting()
	})
	a3, a4 := rows["a3"], rows["a4"]
	if a3.Pod != "" || a3.Status != cluster.StatusQueued || a3.JobStatus != cluster.StatusQueued || a3.Queue.Position != 2 || a3.Queue.Pending != 2 {
		t.Errorf("a3: %+v %+v", a3, a3.Queue)
	}
	if a4.Status != cluster.StatusQueued || a4.Queue.Position != 1 || a4.Queue.Priority != 1000000 || a4.Queue.PriorityClass != "gpuctl-high" {
		t.Errorf("a4: %+v %+v", a4, a4.Queue)
	}
	if q := rows["a1"].Queue; len(q.Flavors) != 1 || q.Flavors[0] != pool || q.AdmittedAt == nil || q.Summary() != "admitted to qs-pool in qs-alice" {
		t.Errorf("a1: %+v", q)
	}
	if w := a3.Queue.WaitsFor; w.Need != "4" || w.Used != "8" || w.Nominal != "8" || w.CohortLending != "2" || w.Cohort != cohort {
		t.Errorf("a3 waits for %+v", w)
	}

	// The CLI: STATUS Queued; -o wide's QUEUE and REASON; describe's Queue section; a filter.
	if l := line(gpuctl(t, "get", "jobs", "-n", alice), " a3 "); !strings.Contains(l, " Queued ") {
		t.Errorf("get jobs, a3: %q", l)
	}
	if l := line(gpuctl(t, "get", "jobs", "-A", "-o", "wide"), " a3 "); !strings.Contains(l, " Queued ") ||
		!strings.Contains(l, "qs-alice #2   "+wantA3) {
		t.Errorf("get jobs -A -o wide, a3: %q", l)
	}
	if out := gpuctl(t, "get", "jobs", "-A", "--status", "queued", "-o", "name"); out != "qs-alice.a3\nqs-alice.a4\n" {
		t.Errorf("get jobs --status queued: %q", out)
	}
	desc := gpuctl(t, "describe", "job", "qs-alice.a3")
	for _, want := range []string{"Status:", "Queued", "Queue:\n", "ClusterQueue:", "qs-alice (LocalQueue default, Workload job-a3-",
		"Position:", "#2 of 2", "Priority:", "100 (gpuctl-low)", "Waits for:", "4 × a100-80g in qs-pool, team qs-alice at 8/8, cohort lending 2",
		"Queued since:"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe job a3 lacks %q:\n%s", want, desc)
		}
	}
	if out := gpuctl(t, "describe", "job", "qs-alice.a3", "-o", "json"); !strings.Contains(out, `"position": 2`) || !strings.Contains(out, `"cohortLending": "2"`) {
		t.Errorf("describe -o json:\n%s", out)
	}

	// The daemon's informers answer the same, and a read sends no request once they listed.
	var reqs requestLog
	cfg := rest.CopyConfig(c.RESTConfig())
	cfg.Wrap(reqs.wrap)
	countedKube, countedDyn := kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	objects := cluster.StartInformers(ctx, countedKube, countedDyn, "")
	cached := &cluster.Reader{Client: countedKube, Objects: objects}
	waitRows(t, cached, alice, "the informers to show a3 queued", func(rows map[string]cluster.JobPod) bool {
		return rows["a3"].Reason == wantA3
	})
	h := httpapi.New(httpapi.Options{Kube: countedKube, Dynamic: countedDyn, Objects: objects, Tokens: oneToken{},
		Registry: prometheus.NewRegistry()})
	reqs.take()
	if _, err := cached.Job(t.Context(), "qs-alice.a3"); err != nil {
		t.Fatal(err)
	}
	if _, err := cached.Jobs(t.Context(), cluster.JobFilter{Status: "queued"}); err != nil {
		t.Fatal(err)
	}
	api := get(t, h, "/api/v1/jobs/qs-alice.a3")
	page := get(t, h, "/jobs/qs-alice.a3")
	overview := get(t, h, "/")
	if sent := reqs.take(); len(sent) > 0 {
		t.Errorf("reads from the informers sent %d requests: %v", len(sent), sent)
	}
	var detail cluster.JobDetail
	if err := json.Unmarshal([]byte(api), &detail); err != nil || detail.Status != cluster.StatusQueued || detail.Queue == nil ||
		detail.Queue.Position != 2 || detail.Queue.WaitsFor.Display != "a100-80g" {
		t.Errorf("GET /api/v1/jobs/qs-alice.a3 (%v):\n%s", err, api)
	}
	if !strings.Contains(page, "Queued in <code>qs-alice</code> · #2 of 2") || !strings.Contains(page, "waits for 4 × a100-80g in qs-pool") {
		t.Errorf("the job page lacks the queue:\n%s", page)
	}
	if !strings.Contains(overview, "qs-alice #2</span>") {
		t.Errorf("the overview lacks a3's place in the queue:\n%s", overview)
	}

	// bob lends 4: a4 borrows them; a3 waits with nothing left to lend.
	apply(t, dyn, "ClusterQueue", "", bob, clusterQueue(bob, "4"))
	wantA3 = "#1 in qs-alice: waits for 4 × a100-80g in qs-pool, team qs-alice at 12/8, cohort lending 0"
	waitRows(t, r, alice, "a4 to borrow", func(rows map[string]cluster.JobPod) bool {
		return state(rows["a4"]) == cluster.QueueAdmitted && rows["a3"].Reason == wantA3
	})

	// bob's own job reclaims his GPUs: one of alice's jobs is preempted by it.
	trainingJob(t, kube, bob, "b1", "medium", 8)
	var victim cluster.JobPod
	waitRows(t, r, alice, "a job of alice to be preempted", func(rows map[string]cluster.JobPod) bool {
		for _, row := range rows {
			if state(row) == cluster.QueuePreempted && row.Pod == "" && row.Status == cluster.StatusPreempted {
				victim = row
				return true
			}
		}
		return false
	})
	if p := victim.Queue.PreemptedBy; victim.Status != cluster.StatusPreempted || p == nil || p.JobID != "qs-bob.b1" ||
		!strings.HasPrefix(victim.Reason, "preempted by qs-bob.b1 (reclamation within the cohort)") {
		t.Errorf("the preempted job %s: status %s, reason %q, by %+v", victim.Name, victim.Status, victim.Reason, p)
	}
	// The job's reason: requeued, never a failed attempt.
	want := "Preempted by qs-bob.b1 (reclamation within the cohort), requeued"
	if victim.Queue.Position > 0 { // Kueue puts it back in line once its quota is released
		want += fmt.Sprintf(" at #%d", victim.Queue.Position)
	}
	if victim.JobReason != want {
		t.Errorf("the preempted job's reason %q, want %q", victim.JobReason, want)
	}
	scoped, err := jobRows(t.Context(), cluster.Scope(r, []string{alice}), alice)
	if err != nil {
		t.Fatal(err)
	}
	if row := scoped[victim.Name]; row.Queue == nil || row.Queue.PreemptedBy.JobID != "" ||
		!strings.HasPrefix(row.Reason, "preempted by another team's job (reclamation within the cohort)") ||
		!strings.HasPrefix(row.JobReason, "Preempted by another team's job (reclamation within the cohort), requeued") {
		t.Errorf("alice's own scope shows the preemptor: %q %q %+v", row.Reason, row.JobReason, row.Queue)
	}
	if desc := gpuctl(t, "describe", "job", alice+"."+victim.Name); !strings.Contains(desc, "by qs-bob.b1 (reclamation within the cohort)") {
		t.Errorf("describe of the preempted job:\n%s", desc)
	}
}
