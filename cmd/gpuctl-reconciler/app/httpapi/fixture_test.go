package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// Tokens of the tests.
const (
	adminToken = "admin-secret"
	userToken  = "viewer-secret" // not admin, sees every namespace
	teamToken  = "alice-secret"  // sees namespace alice only
	noNSToken  = "legacy-secret" // not admin, no namespace (an old token file line)
)

// tokenMap is a TokenSource for tests.
type tokenMap map[string]Principal

func (m tokenMap) Lookup(token string) (Principal, bool) { p, ok := m[token]; return p, ok }

var testTokens = tokenMap{
	adminToken: {Name: "ops", Admin: true},
	userToken:  {Name: "viewer", AllNamespaces: true},
	teamToken:  {Name: "alice", Namespaces: []string{"alice"}},
	noNSToken:  {Name: "legacy"},
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

func (b *fakeBackend) RequestSync(context.Context) (daemon.Request, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return daemon.Request{}, b.err
	}
	b.syncs++
	return daemon.Request{ID: "req-1", Version: "42"}, nil
}

// testServer is the handler over the fixture cluster (clusterfixture.Objects, or objs when
// there are any), a fake backend and a fresh registry.
func testServer(t *testing.T, objs ...runtime.Object) (http.Handler, *fakeBackend) {
	t.Helper()
	return testServerWith(t, nil, objs...)
}

// testServerWith is testServer with the options that edit sets (when not nil).
func testServerWith(t *testing.T, edit func(*Options), objs ...runtime.Object) (http.Handler, *fakeBackend) {
	t.Helper()
	if objs == nil {
		objs = clusterfixture.Objects()
	}
	b := &fakeBackend{status: daemon.Status{Source: "git https://example.com/gpus.git", Result: daemon.ResultSucceeded,
		Revision: "main@abc123", Summary: "no changes"}}
	opts := Options{Backend: b, Kube: fake.NewClientset(objs...), Tokens: testTokens, Registry: prometheus.NewRegistry()}
	if edit != nil {
		edit(&opts)
	}
	return New(opts), b
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
