package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// storeBackend is a daemon whose drift report is the one kept in the cluster; it has nothing
// else (the embedded Backend is nil).
type storeBackend struct {
	httpapi.Backend
	store *drift.Store
}

func (b storeBackend) Drift(ctx context.Context) (drift.Report, []drift.Entry, error) {
	return b.store.Read(ctx)
}

// oneToken knows the token "tok".
type oneToken struct{}

func (oneToken) Lookup(t string) (httpapi.Principal, bool) {
	return httpapi.Principal{Name: "reader"}, t == "tok"
}

// TestDriftJSONIsTheAPIDocument: for the same drift ConfigMap, gpuctl drift -o json prints
// byte for byte what GET /api/v1/drift answers: one shape, summary included, whether there is
// drift or none. The two binaries' edges are compared here, the one place that may import both.
func TestDriftJSONIsTheAPIDocument(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	now := time.Now().UTC().Truncate(time.Second)
	changed := now.Add(-10 * time.Minute)
	web := drift.Item{
		Object:   drift.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-a", Name: "web"},
		Category: drift.Modified, Source: "teams/a/web.yaml", Message: "1 field differs",
		Fields:  []drift.Field{{Path: "spec.replicas", Desired: 1, Live: 3, Manager: "kubectl-edit", Operation: "Update", Time: &changed}},
		Manager: "kubectl-edit", Changed: &changed, Detected: now.Add(-9 * time.Minute),
	}
	shadow := drift.Item{
		Object:   drift.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "team-b", Name: "sweep"},
		Category: drift.Shadow, Message: "4 GPUs, not in Git", GPUs: 4, Detected: now.Add(-3 * 24 * time.Hour),
	}
	old := drift.Item{Object: drift.Ref{Kind: "Service", Namespace: "team-a", Name: "old-svc"}, Category: drift.Deleted}
	cases := map[string]struct {
		report drift.Report
		hist   []drift.Entry
	}{
		"drift": {drift.Report{Generated: now.Add(-time.Minute), Mode: "report", Revision: "0123456789abcdef", Items: []drift.Item{web, shadow}},
			[]drift.Entry{{Time: now.Add(-48 * time.Hour), Change: drift.Resolved, Item: old}, {Time: now.Add(-9 * time.Minute), Change: drift.Detected, Item: web}}},
		"empty": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ns := "drift-json-" + name
			if err := daemon.EnsureNamespace(ctx, kube, ns); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
			store := drift.NewStore(kube, ns)
			if err := store.Write(ctx, tc.report, tc.hist); err != nil {
				t.Fatal(err)
			}

			cli, errOut, code := gpuctl(t, "drift", "-n", ns, "--since", "0", "-o", "json")
			if code != 0 {
				t.Fatalf("gpuctl drift: exit %d\n%s", code, errOut)
			}
			h := httpapi.New(httpapi.Options{Tokens: oneToken{}, Backend: storeBackend{store: store}, Registry: prometheus.NewRegistry()})
			req := httptest.NewRequest(http.MethodGet, "/api/v1/drift?since=0", nil)
			req.Header.Set("Authorization", "Bearer tok")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET /api/v1/drift: %d %s", rec.Code, rec.Body)
			}
			if api := rec.Body.String(); api != cli {
				t.Errorf("gpuctl drift -o json differs from GET /api/v1/drift:\n--- cli\n%s\n--- api\n%s", cli, api)
			}
			if want := `"summary": "` + tc.report.Summary() + `"`; !strings.Contains(cli, want) {
				t.Errorf("no %s in:\n%s", want, cli)
			}
			if name == "drift" && !strings.Contains(cli, "old-svc") {
				t.Errorf("--since 0 lacks the history entry of two days ago:\n%s", cli)
			}
		})
	}
}
