package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAuthentication(t *testing.T) {
	h, _ := testServer(t)
	tests := map[string]struct {
		header    string
		challenge string
	}{
		"no header":        {"", `Bearer realm="gpuctl"`},
		"wrong token":      {"Bearer nope", `Bearer realm="gpuctl", error="invalid_token"`},
		"basic auth":       {"Basic YWxpY2U6c2VjcmV0", `Bearer realm="gpuctl"`},
		"empty token":      {"Bearer ", `Bearer realm="gpuctl"`},
		"token as scheme":  {adminToken, `Bearer realm="gpuctl"`},
		"prefix of token":  {"Bearer admin", `Bearer realm="gpuctl", error="invalid_token"`},
		"token with extra": {"Bearer " + adminToken + "x", `Bearer realm="gpuctl", error="invalid_token"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/api/v1/status", "/api/v1/jobs", "/api/v1/no-such-route"} {
				r := httptest.NewRequest(http.MethodGet, path, nil)
				if tc.header != "" {
					r.Header.Set("Authorization", tc.header)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				wantError(t, w, http.StatusUnauthorized)
				if got := w.Header().Get("WWW-Authenticate"); got != tc.challenge {
					t.Errorf("%s: WWW-Authenticate %q, want %q", path, got, tc.challenge)
				}
			}
		})
	}
}

func TestAuthenticationSchemeIsCaseInsensitive(t *testing.T) {
	h, _ := testServer(t)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/status", nil)
	r.Header.Set("Authorization", "bearer "+userToken)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("code %d, body %s", w.Code, w.Body)
	}
}

func TestNoTokenSourceRefusesAll(t *testing.T) {
	h := New(Options{Kube: fake.NewClientset(), Registry: prometheus.NewRegistry()})
	wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs", adminToken), http.StatusUnauthorized)
}

func TestSync(t *testing.T) {
	h, b := testServer(t)
	e := wantError(t, do(t, h, http.MethodPost, "/api/v1/sync", userToken), http.StatusForbidden)
	if !strings.Contains(e.Message, "viewer") {
		t.Errorf("403 message %q does not name the caller", e.Message)
	}
	wantError(t, do(t, h, http.MethodPost, "/api/v1/sync", ""), http.StatusUnauthorized)
	if b.syncs != 0 {
		t.Fatalf("refused requests reached the backend: %d syncs", b.syncs)
	}

	w := do(t, h, http.MethodPost, "/api/v1/sync", adminToken)
	if w.Code != http.StatusAccepted {
		t.Fatalf("admin sync: code %d, body %s", w.Code, w.Body)
	}
	var resp SyncResponse
	decode(t, w, &resp)
	if resp.RequestID != "req-1" || resp.Version != "42" || b.syncs != 1 {
		t.Errorf("sync: %+v, %d syncs", resp, b.syncs)
	}

	w = do(t, h, http.MethodGet, "/api/v1/sync", adminToken)
	wantError(t, w, http.StatusMethodNotAllowed)
	if got := w.Header().Get("Allow"); got != "POST" {
		t.Errorf("Allow %q, want POST", got)
	}
}

func TestStatus(t *testing.T) {
	h, b := testServer(t)
	var obj map[string]any
	get(t, h, "/api/v1/status", http.StatusOK, &obj)
	wantKeys(t, "status", obj, "source", "revision", "result", "summary", "lastAttempt", "lastSuccess")
	if obj["result"] != "Succeeded" || obj["revision"] != "main@abc123" {
		t.Errorf("status %v", obj)
	}
	b.err = errBoom
	e := wantError(t, do(t, h, http.MethodGet, "/api/v1/status", userToken), http.StatusInternalServerError)
	if !strings.Contains(e.Message, "boom") {
		t.Errorf("500 message %q", e.Message)
	}
	wantError(t, do(t, h, http.MethodPost, "/api/v1/sync", adminToken), http.StatusInternalServerError)
}

func TestPlan(t *testing.T) {
	h, b := testServer(t)
	var obj map[string]any
	get(t, h, "/api/v1/plan", http.StatusOK, &obj)
	wantKeys(t, "empty plan", obj, "summary", "changes")
	if obj["summary"] != "no changes" || fmt.Sprint(obj["changes"]) != "[]" {
		t.Errorf("empty plan %v", obj)
	}

	b.plan = &reconciler.Plan{
		Changes: []*reconciler.Change{
			{Object: object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "alice", Name: "sft"},
				Action: reconciler.ActionCreate, Source: "teams/alice/sft.yaml"},
			{Object: object.Ref{APIVersion: "v1", Kind: "Namespace", Name: "alice"}, Action: reconciler.ActionUnchanged},
		},
		GPUs: []reconciler.GPUDelta{{Namespace: "alice", Pool: "training-pool", Before: 0, After: 4}},
	}
	var resp PlanResponse
	get(t, h, "/api/v1/plan", http.StatusOK, &resp)
	if want := b.plan.Summary(); resp.Summary != want || !strings.HasPrefix(want, "1 to create, 1 unchanged") {
		t.Errorf("summary %q, want %q", resp.Summary, want)
	}
	if len(resp.Changes) != 2 || resp.Changes[0].Action != reconciler.ActionCreate || resp.Changes[0].Object.Name != "sft" {
		t.Errorf("changes %+v", resp.Changes)
	}
	get(t, h, "/api/v1/plan", http.StatusOK, &obj)
	wantKeys(t, "plan", obj, "summary", "changes", "gpus")

	b.plan.Refused = &reconciler.SafetyError{Reason: "empty render", Override: "--allow-empty"}
	get(t, h, "/api/v1/plan", http.StatusOK, &obj)
	wantKeys(t, "refused plan", obj, "summary", "changes", "gpus", "refused")
}

func TestNoBackendOrKube(t *testing.T) {
	h := New(Options{Tokens: testTokens, Registry: prometheus.NewRegistry()})
	for _, path := range []string{"/api/v1/status", "/api/v1/plan", "/api/v1/jobs", "/api/v1/jobs/a.b",
		"/api/v1/pools", "/api/v1/nodes", "/api/v1/nodes/x", "/api/v1/quotas", "/api/v1/quotas/alice"} {
		wantError(t, do(t, h, http.MethodGet, path, userToken), http.StatusInternalServerError)
	}
}

func TestUnauthenticatedEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	ready := errors.New("no revision applied yet")
	h := New(Options{Registry: reg, Ready: func() error { return ready }})

	w := do(t, h, http.MethodGet, "/healthz", "")
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "ok" {
		t.Errorf("healthz: %d %q", w.Code, w.Body)
	}
	w = do(t, h, http.MethodGet, "/readyz", "")
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "no revision applied yet") {
		t.Errorf("readyz not ready: %d %q", w.Code, w.Body)
	}
	ready = nil
	w = do(t, h, http.MethodGet, "/readyz", "")
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "ok" {
		t.Errorf("readyz ready: %d %q", w.Code, w.Body)
	}

	w = do(t, h, http.MethodGet, "/metrics", "")
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("metrics: %d", w.Code)
	}
	for _, want := range []string{
		`gpuctl_api_requests_total{code="200",method="get",route="GET /healthz"} 1`,
		`gpuctl_api_requests_total{code="503",method="get",route="GET /readyz"} 1`,
		`gpuctl_api_request_duration_seconds_count{method="get",route="GET /readyz"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestDefaultRegistry(t *testing.T) {
	h1 := New(Options{})
	h2 := New(Options{}) // registers the same collectors again: shared, no panic
	do(t, h1, http.MethodGet, "/healthz", "")
	do(t, h2, http.MethodGet, "/healthz", "")
	w := do(t, h2, http.MethodGet, "/metrics", "")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `route="GET /healthz"`) {
		t.Errorf("default registry metrics: %d\n%s", w.Code, w.Body)
	}
}

func TestWebhooks(t *testing.T) {
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "hook %s %s", r.Method, b)
	})
	h := New(Options{Tokens: testTokens, Registry: prometheus.NewRegistry(),
		Webhooks: map[string]http.Handler{"/hooks/github": hook, "POST /hooks/gitlab": hook}})

	for _, path := range []string{"/hooks/github", "/hooks/gitlab"} {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader("push"))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Body.String() != "hook POST push" {
			t.Errorf("%s: %d %q", path, w.Code, w.Body)
		}
	}
	wantError(t, do(t, h, http.MethodGet, "/hooks/unknown", ""), http.StatusNotFound)

	defer func() {
		if recover() == nil {
			t.Error("a webhook under /api/ was accepted")
		}
	}()
	New(Options{Registry: prometheus.NewRegistry(), Webhooks: map[string]http.Handler{"POST /api/v1/hook": hook}})
}

// TestGitOpsWritesAre405: without a Writer (the daemon), and for what only Git holds (pools,
// quotas, node labels), writes answer 405 with what to do instead.
func TestGitOpsWritesAre405(t *testing.T) {
	h, _ := testServer(t)
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/jobs"},
		{http.MethodPost, "/api/v1/jobs/batch"},
		{http.MethodDelete, "/api/v1/jobs/alice.sft"},
		{http.MethodPost, "/api/v1/jobs/alice.sft/pause"},
		{http.MethodPost, "/api/v1/jobs/alice.sft/scale"},
		{http.MethodPost, "/api/v1/pools"},
		{http.MethodDelete, "/api/v1/pools/training-pool"},
		{http.MethodPost, "/api/v1/quotas"},
		{http.MethodDelete, "/api/v1/quotas/alice"},
		{http.MethodPost, "/api/v1/nodes/gpu-1/labels"},
		{http.MethodDelete, "/api/v1/nodes/gpu-1/labels/g8s.host/gpu-type"},
		{http.MethodPost, "/api/v1/nodes/labels/batch"},
		{http.MethodPatch, "/api/v1/status"},
	} {
		w := do(t, h, tc.method, tc.path, adminToken)
		e := wantError(t, w, http.StatusMethodNotAllowed)
		if !strings.Contains(e.Message, "commit the file to Git instead") {
			t.Errorf("%s %s: message %q", tc.method, tc.path, e.Message)
		}
		if got := w.Header().Get("Allow"); got != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, got)
		}
	}
	// Authentication comes first.
	wantError(t, do(t, h, http.MethodPost, "/api/v1/jobs", ""), http.StatusUnauthorized)
	// A path with writes lists its methods.
	for path, allow := range map[string]string{"/api/v1/jobs/alice.sft": "GET, HEAD, DELETE", "/api/v1/jobs/alice.sft/resume": "POST",
		"/api/v1/jobs/batch": "GET, HEAD, DELETE", "/api/v1/sync": "POST"} {
		w := do(t, h, http.MethodPut, path, adminToken)
		wantError(t, w, http.StatusMethodNotAllowed)
		if got := w.Header().Get("Allow"); got != allow {
			t.Errorf("PUT %s: Allow %q, want %q", path, got, allow)
		}
	}
}

func TestNotFoundIsJSON(t *testing.T) {
	h, _ := testServer(t)
	wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/logs", userToken), http.StatusNotFound)
	wantError(t, do(t, h, http.MethodGet, "/api/v2/jobs", userToken), http.StatusNotFound)
	wantError(t, do(t, h, http.MethodGet, "/nope", ""), http.StatusNotFound)
}

func TestPatternPath(t *testing.T) {
	for in, want := range map[string]string{
		"/hooks/github": "/hooks/github", "POST /hooks/x": "/hooks/x", "POST example.com/api/": "/api/",
		"GET  /api/v1/x": "/api/v1/x",
	} {
		if got := patternPath(in); got != want {
			t.Errorf("patternPath(%q) = %q, want %q", in, got, want)
		}
	}
}
