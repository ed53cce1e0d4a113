package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/gpuctl/gpuctl/drift"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// Tokens of the tests.
const (
	adminToken = "admin-secret"
	userToken  = "alice-secret"
)

// tokenMap is a TokenSource for tests.
type tokenMap map[string]Principal

func (m tokenMap) Lookup(token string) (Principal, bool) { p, ok := m[token]; return p, ok }

var testTokens = tokenMap{
	adminToken: {Name: "ops", Admin: true},
	userToken:  {Name: "alice"},
}

// fakeBackend is a daemon that records sync requests.
type fakeBackend struct {
	mu     sync.Mutex
	status daemon.Status
	plan   *reconciler.Plan
	drift  drift.Report
	hist   []drift.Entry
	err    error
	syncs  int
}

func (b *fakeBackend) Drift(context.Context) (drift.Report, []drift.Entry, error) {
	return b.drift, b.hist, b.err
}

func (b *fakeBackend) Status(context.Context) (daemon.Status, error) { return b.status, b.err }

func (b *fakeBackend) Plan(context.Context) (*reconciler.Plan, error) { return b.plan, b.err }

func (b *fakeBackend) RequestSync(context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return "", b.err
	}
	b.syncs++
	return "req-1", nil
}

var t0 = time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

// testServer is the handler over the fixture cluster, a fake backend and a fresh registry.
func testServer(t *testing.T, objs ...runtime.Object) (http.Handler, *fakeBackend) {
	t.Helper()
	if objs == nil {
		objs = cluster()
	}
	b := &fakeBackend{status: daemon.Status{Source: "git https://example.com/gpus.git", Result: daemon.ResultSucceeded,
		Revision: "main@abc123", Summary: "no changes"}}
	h := New(Options{Backend: b, Kube: fake.NewClientset(objs...), Tokens: testTokens,
		Registry: prometheus.NewRegistry()})
	return h, b
}

// do sends a request with a bearer token ("" for none).
func do(t *testing.T, h http.Handler, method, path, token string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// get sends an admin GET, wants the code and decodes the body into v (if not nil).
// pageOfMaps is a paged list answer decoded without its item type, to check JSON keys.
type pageOfMaps struct {
	Total    int              `json:"total"`
	Page     int              `json:"page"`
	PageSize int              `json:"pageSize"`
	Items    []map[string]any `json:"items"`
}

func get(t *testing.T, h http.Handler, path string, code int, v any) {
	t.Helper()
	w := do(t, h, http.MethodGet, path, adminToken)
	if w.Code != code {
		t.Fatalf("GET %s: code %d, want %d; body %s", path, w.Code, code, w.Body)
	}
	if v != nil {
		decode(t, w, v)
	}
}

func decode(t *testing.T, w *httptest.ResponseRecorder, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", w.Body, err)
	}
}

// wantKeys checks the keys of a JSON object.
func wantKeys(t *testing.T, what string, obj map[string]any, want ...string) {
	t.Helper()
	got := slices.Sorted(maps.Keys(obj))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s keys:\n got %v\nwant %v", what, got, want)
	}
}

// wantError checks a JSON error answer.
func wantError(t *testing.T, w *httptest.ResponseRecorder, code int) Error {
	t.Helper()
	if w.Code != code {
		t.Fatalf("code %d, want %d; body %s", w.Code, code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e Error
	decode(t, w, &e)
	if e.Code != code || e.Message == "" {
		t.Errorf("error body %+v, want code %d and a message", e, code)
	}
	return e
}

var errBoom = errors.New("boom")

// cluster is the fixture: four nodes, two registered pools, six gpuctl jobs, pods and quotas.
func cluster() []runtime.Object {
	objs := []runtime.Object{
		node("cpu-1", "", "", 0, true),
		node("gpu-1", "training-pool", "a100-80g", 8, true),
		node("gpu-2", "training-pool", "a100-40g", 8, false),
		node("gpu-3", "", "t4", 4, true),
		registry("training-pool", "for training", `[{"name":"gpu-1","gpuType":"a100-80g"},{"name":"gpu-2","gpuType":"a100-40g"}]`),
		registry("inference-pool", "for inference", `[{"name":"inf-1","gpuType":"a10-24g"}]`),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: keys.SystemNamespace}},
	}
	sft := job("alice", "sft", "training-pool", 4, batchv1.JobStatus{Active: 1, StartTime: at(5 * time.Minute)})
	sft.Annotations = map[string]string{keys.Source: "teams/alice/sft.yaml", keys.Description: "qwen2 sft"}
	sft.Spec.Template.Spec.NodeSelector = map[string]string{keys.GPUType: "a100-80g"}
	objs = append(objs, sft,
		job("alice", "old", "training-pool", 2, batchv1.JobStatus{Succeeded: 1}),
		job("bob", "failed-run", keys.DefaultPool, 0, batchv1.JobStatus{Failed: 1}),
		deployment("bob", "llm", "inference", keys.DefaultPool, 2, 1, 1),
		deployment("bob", "web", "compute", keys.DefaultPool, 1, 1, 0),
		statefulSet("alice", "nb", "training-pool", 1, 0),
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "bob"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "not-a-job", Namespace: "bob",
			Labels: map[string]string{keys.ManagedBy: keys.ManagedByValue}}},
		pod("alice", "sft-abcde", "sft", "gpu-1", corev1.PodRunning, 4, at(5*time.Minute)),
		pod("alice", "old-xyz", "old", "gpu-1", corev1.PodSucceeded, 2, at(0)),
		pod("bob", "llm-1", "llm", "gpu-3", corev1.PodRunning, 1, at(10*time.Minute)),
		pod("bob", "llm-2", "llm", "", corev1.PodPending, 1, nil),
		pod("bob", "stray", "", "gpu-2", corev1.PodRunning, 2, at(0)),
		quota("alice", "team-quota", corev1.ResourceList{corev1.ResourceRequestsCPU: q("10"),
			corev1.ResourceRequestsMemory: q("20Gi"), keys.QuotaRequestsGPU: q("4")},
			corev1.ResourceList{corev1.ResourceRequestsCPU: q("5"), corev1.ResourceRequestsMemory: q("5Gi"),
				keys.QuotaRequestsGPU: q("4")}),
		quota("bob", "team-quota", corev1.ResourceList{keys.QuotaRequestsGPU: q("2")},
			corev1.ResourceList{keys.QuotaRequestsGPU: q("1")}),
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "carol"}},
	)
	return objs
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func node(name, pool, gpuType string, gpus int64, ready bool) *corev1.Node {
	labels := map[string]string{"kubernetes.io/hostname": name}
	if pool != "" {
		labels[keys.Pool] = pool
	}
	if gpuType != "" {
		labels[keys.GPUType] = gpuType
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: q("64"), corev1.ResourceMemory: q("256Gi")}
	if gpus > 0 {
		alloc[keys.ResourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(t0)},
		Status: corev1.NodeStatus{Allocatable: alloc, Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: *at(time.Hour)},
			{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: *at(2 * time.Hour)},
		}},
	}
}

func registry(name, desc, nodes string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: keys.PoolRegistryPrefix + name, Namespace: keys.SystemNamespace,
			Labels: map[string]string{keys.PoolRegistry: "true", keys.Pool: name, keys.ManagedBy: keys.ManagedByValue}},
		Data: map[string]string{"name": name, "description": desc, "nodes": nodes},
	}
}

func jobLabels(name, kind, pool string) map[string]string {
	return map[string]string{keys.JobType: kind, keys.Pool: pool, keys.Priority: "medium", keys.App: name,
		keys.ManagedBy: keys.ManagedByValue}
}

func template(name, kind, pool string, gpus int64) corev1.PodTemplateSpec {
	res := corev1.ResourceList{corev1.ResourceCPU: q("32"), corev1.ResourceMemory: q("128Gi")}
	if gpus > 0 {
		res[keys.ResourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: jobLabels(name, kind, pool)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img",
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
	}
}

func job(ns, name, pool string, gpus int64, st batchv1.JobStatus) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: jobLabels(name, "training", pool),
			CreationTimestamp: metav1.NewTime(t0)},
		Spec:   batchv1.JobSpec{Template: template(name, "training", pool, gpus)},
		Status: st,
	}
}

func deployment(ns, name, kind, pool string, replicas, ready int32, gpus int64) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: jobLabels(name, kind, pool),
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: template(name, kind, pool, gpus),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: name}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

func statefulSet(ns, name, pool string, replicas, ready int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: jobLabels(name, "notebook", pool),
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Template: template(name, "notebook", pool, 0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: name}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: ready},
	}
}

func pod(ns, name, app, nodeName string, phase corev1.PodPhase, gpus int64, started *metav1.Time) *corev1.Pod {
	labels := map[string]string{}
	if app != "" {
		labels = map[string]string{keys.App: app, keys.ManagedBy: keys.ManagedByValue}
	}
	res := corev1.ResourceList{corev1.ResourceCPU: q("32"), corev1.ResourceMemory: q("128Gi"),
		keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{Limits: res}}}},
		Status: corev1.PodStatus{Phase: phase, StartTime: started},
	}
}

func quota(ns, name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{keys.Quota: name, keys.ManagedBy: keys.ManagedByValue}},
		Spec:   corev1.ResourceQuotaSpec{Hard: hard},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}
