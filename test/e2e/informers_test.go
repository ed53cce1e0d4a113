package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// The daemon's read model answers from informers (cluster.InformerObjects): the same answers as
// the direct path (cluster.APIObjects, the CLI's), and no request to the API server per API
// request once the informers have listed.

// requestLog counts the requests that pass through a client's transport, by kind.
type requestLog struct {
	mu   sync.Mutex
	reqs []string // "LIST /api/v1/pods", "GET /api/v1/nodes/x", "WATCH ..."
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, requestKind(r)+" "+r.URL.Path)
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

// requestKind tells a LIST (a GET of a collection) from a GET of one object and from a WATCH.
func requestKind(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case r.Method != http.MethodGet:
		return r.Method
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		return "WATCH"
	case isCollection(r.URL):
		return "LIST"
	}
	return "GET"
}

// isCollection reports whether a path names a collection: /api/v1/pods,
// /api/v1/namespaces/x/pods, /apis/batch/v1/jobs, not /api/v1/nodes/n.
func isCollection(u *url.URL) bool {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) > 0 && parts[0] == "apis" {
		parts = parts[1:] // group
	}
	parts = parts[2:] // api or group, version
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return len(parts) == 1
}

// take returns the requests so far, except watches, and forgets them.
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs {
		if !strings.HasPrefix(r, "WATCH ") {
			out = append(out, r)
		}
	}
	l.reqs = nil
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// readModelCluster creates, in namespace ns, the cases of the read model: a running 2-pod
// training, a training pending for lack of GPUs, a suspended one (no pods), a Deployment, a
// StatefulSet, a quota, and a pool registry entry in sys.
func readModelCluster(t *testing.T, kube kubernetes.Interface, ns, sys string) {
	t.Helper()
	create := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	// The quota first, and its status computed before any pod is asked for (quotaComputed). It
	// holds more GPUs than the cases ask for, so that every pod is admitted.
	q := clusterfixture.Quota(ns, ns, corev1.ResourceList{keys.QuotaRequestsGPU: clusterfixture.Q("80")}, nil)
	q.Status = corev1.ResourceQuotaStatus{}
	_, err := kube.CoreV1().ResourceQuotas(ns).Create(t.Context(), q, metav1.CreateOptions{})
	create("ResourceQuota", err)
	quotaComputed(t, kube, ns, ns)
	trainingJob(t, kube, ns, "inf-multi", 2, 1, false)
	trainingJob(t, kube, ns, "inf-pending", 1, 64, false)
	trainingJob(t, kube, ns, "inf-queued", 1, 1, true)
	replicas := int32(1)
	tmpl := gpuTemplate("inf-web", "inference", 1)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	_, err = kube.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-web", Namespace: ns, Labels: tmpl.Labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: "inf-web"}}},
	}, metav1.CreateOptions{})
	create("Deployment inf-web", err)
	nb := gpuTemplate("inf-lab", "notebook", 0)
	nb.Spec.RestartPolicy = corev1.RestartPolicyAlways
	_, err = kube.AppsV1().StatefulSets(ns).Create(t.Context(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-lab", Namespace: ns, Labels: nb.Labels},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Template: nb,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: "inf-lab"}}},
	}, metav1.CreateOptions{})
	create("StatefulSet inf-lab", err)
	cm := render.PoolRecord{Name: "informer-pool", Description: "for the informers' test"}.ConfigMap(sys, "pools/informer.yaml")
	_, err = kube.CoreV1().ConfigMaps(sys).Create(t.Context(), cm, metav1.CreateOptions{})
	create("pool registry ConfigMap", err)
	startedPods(t, kube, ns, "inf-multi", 2)
	startedPods(t, kube, ns, "inf-web", 1)
}

// modelAnswers are every answer of the read model that the API serves, as JSON, by call.
func modelAnswers(ctx context.Context, r *cluster.Reader, ns string) map[string]string {
	out := map[string]string{}
	put := func(call string, v any, err error) {
		if err != nil {
			out[call] = "error: " + err.Error()
			return
		}
		b, _ := json.Marshal(v)
		out[call] = string(b)
	}
	jobs, err := r.Jobs(ctx, cluster.JobFilter{})
	put("Jobs", jobs, err)
	for _, f := range []cluster.JobFilter{{Status: "running"}, {Kind: "inference"}, {Pool: "default", Page: cluster.Page{Number: 2, Size: 2}}} {
		v, err := r.Jobs(ctx, f)
		put(fmt.Sprintf("Jobs %+v", f), v, err)
	}
	for _, id := range []string{ns + ".inf-multi", ns + ".inf-pending", ns + ".inf-queued", ns + ".inf-web", ns + ".inf-lab", ns + ".nope", "inf-lab"} {
		v, err := r.Job(ctx, id)
		put("Job "+id, v, err)
		ev, err := r.JobEvents(ctx, id)
		put("JobEvents "+id, ev, err)
	}
	ev, err := r.Events(ctx, ns)
	put("Events "+ns, ev, err)
	pools, err := r.Pools(ctx)
	put("Pools", pools, err)
	for _, p := range []string{"informer-pool", "default", "nope"} {
		v, err := r.Pool(ctx, p)
		put("Pool "+p, v, err)
	}
	nodes, err := r.Nodes(ctx, cluster.NodeFilter{})
	put("Nodes", nodes, err)
	for _, n := range nodes.Items {
		v, err := r.Node(ctx, n.NodeName)
		put("Node "+n.NodeName, v, err)
	}
	quotas, err := r.Quotas(ctx)
	put("Quotas", quotas, err)
	q, err := r.Quota(ctx, ns)
	put("Quota "+ns, q, err)
	return out
}

func TestInformersAnswerAsTheAPIServer(t *testing.T) {
	c := testcluster.Current()
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	ns := logsNamespace(t, kube, "informers-e2e")
	sys := logsNamespace(t, kube, "informers-e2e-sys")
	readModelCluster(t, kube, ns, sys)

	var reqs requestLog
	cfg := rest.CopyConfig(c.RESTConfig())
	cfg.Wrap(reqs.wrap)
	counted := kubernetes.NewForConfigOrDie(cfg)
	countedDyn := dynamic.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	objects := cluster.StartInformers(ctx, counted, countedDyn, sys) // this cluster has no Kueue
	wait, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := objects.WaitForSync(wait); err != nil {
		t.Fatal(err)
	}

	// The same answers, once the informers have caught up with what the API server has.
	direct := &cluster.Reader{Client: kube, Dynamic: dynamic.NewForConfigOrDie(c.RESTConfig()), Namespace: sys}
	cached := &cluster.Reader{Client: counted, Objects: objects, Namespace: sys}
	var diff []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		want, got := modelAnswers(t.Context(), direct, ns), modelAnswers(t.Context(), cached, ns)
		diff = diff[:0]
		for call, w := range want {
			if got[call] != w {
				diff = append(diff, fmt.Sprintf("%s:\n  API server: %s\n  informers:  %s", call, w, got[call]))
			}
		}
		if len(diff) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(diff) > 0 {
		t.Fatalf("the informers answer otherwise than the API server:\n%s", strings.Join(diff, "\n"))
	}
	// The answers say something: the cases are there.
	if a := modelAnswers(t.Context(), cached, ns); !strings.Contains(a["Job "+ns+".inf-multi"], `"status":"Running"`) ||
		!strings.Contains(a["JobEvents "+ns+".inf-pending"], "FailedScheduling") || !strings.Contains(a["Pools"], "informer-pool") ||
		!strings.Contains(a["Job "+ns+".nope"], "unknown job") || !strings.Contains(a["Quota "+ns], `"gpu":80`) {
		t.Errorf("answers lack a case:\n%v", a)
	}
	if a := modelAnswers(t.Context(), cached, ns); strings.Contains(a["Jobs"], `"queue"`) || strings.Contains(a["Job "+ns+".inf-queued"], `"queue"`) ||
		!strings.Contains(a["Job "+ns+".inf-queued"], `"status":"Pending"`) {
		t.Errorf("without Kueue, a job has a queue state or another status:\n%s\n%s", a["Jobs"], a["Job "+ns+".inf-queued"])
	}

	// Through the daemon's API: no request to the API server per API request.
	h := httpapi.New(httpapi.Options{Kube: counted, Objects: objects, SystemNamespace: sys, Tokens: oneToken{},
		Registry: prometheus.NewRegistry()})
	reqs.take()
	for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs?status=running", "/api/v1/jobs/" + ns + ".inf-multi",
		"/api/v1/jobs/inf-multi", "/api/v1/jobs/" + ns + ".inf-pending/events", "/api/v1/pools", "/api/v1/pools/informer-pool",
		"/api/v1/nodes", "/api/v1/nodes/" + testcluster.DefaultNodes()[0].Name, "/api/v1/quotas", "/api/v1/quotas/" + ns} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if sent := reqs.take(); len(sent) > 0 {
			t.Errorf("GET %s sent %d requests to the API server after the informers synced: %v", path, len(sent), sent)
		}
	}
	// The direct path lists on every call: the counter sees what it is there to see. Without
	// Kueue, the first read asks for its objects (a LIST the API server answers 404), the next
	// ones do not.
	directCounted := &cluster.Reader{Client: counted, Dynamic: countedDyn, Namespace: sys}
	if _, err := directCounted.Jobs(t.Context(), cluster.JobFilter{}); err != nil {
		t.Fatal(err)
	}
	sent := reqs.take()
	if !slices.ContainsFunc(sent, func(r string) bool { return strings.HasPrefix(r, "LIST /apis/kueue.x-k8s.io/v1beta2/workloads") }) {
		t.Errorf("the first direct Jobs sent %v, want a LIST of Kueue's Workloads among them", sent)
	}
	if _, err := directCounted.Jobs(t.Context(), cluster.JobFilter{}); err != nil {
		t.Fatal(err)
	}
	again := reqs.take()
	if slices.ContainsFunc(again, func(r string) bool { return strings.Contains(r, "kueue.x-k8s.io") }) {
		t.Errorf("a second direct Jobs asked for Kueue's objects again in a cluster without them: %v", again)
	}
	// the reader sends its lists at once: in no particular order
	if len(sent) < 3 || !slices.ContainsFunc(sent, func(r string) bool { return strings.HasPrefix(r, "LIST /apis/batch/v1/jobs") }) ||
		!slices.ContainsFunc(sent, func(r string) bool { return strings.HasPrefix(r, "LIST /apis/apps/v1/deployments") }) ||
		!slices.ContainsFunc(sent, func(r string) bool { return strings.HasPrefix(r, "LIST /apis/apps/v1/statefulsets") }) {
		t.Errorf("a direct Jobs sent %v, want a LIST of Jobs, Deployments, StatefulSets (and pods)", sent)
	}
	for _, r := range sent {
		if !strings.HasPrefix(r, "LIST ") {
			t.Errorf("a direct Jobs sent %s, want only LISTs", r)
		}
	}
}
