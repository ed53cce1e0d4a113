package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// oneToken knows the token "tok", which sees every namespace.
type oneToken struct{}

func (oneToken) Lookup(t string) (httpapi.Principal, bool) {
	return httpapi.Principal{Name: "reader", AllNamespaces: true}, t == "tok"
}

// TestDriftJSONIsTheAPIDocument: for the same drift ConfigMap, gpuctl drift -o json prints
// byte for byte what GET /api/v1/drift answers, and both are the document of drift's golden
// files (one item of every category and a history; none): one shape, summary included. The two
// binaries' edges are compared here, the one place that may import both.
func TestDriftJSONIsTheAPIDocument(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	for _, name := range []string{"full", "empty"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			golden, err := os.ReadFile(filepath.Join("..", "..", "drift", "testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc drift.Document
			if err := json.Unmarshal(golden, &doc); err != nil {
				t.Fatal(err)
			}
			ns := "drift-json-" + name
			if err := daemon.EnsureNamespace(ctx, kube, ns); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
			store := drift.NewStore(kube, ns)
			if err := store.Write(ctx, doc.Report, doc.History); err != nil {
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
			if cli != string(golden) {
				t.Errorf("gpuctl drift -o json differs from drift/testdata/%s.json:\n%s", name, cli)
			}
			if want := `"summary": "` + doc.Summary + `"`; !strings.Contains(cli, want) {
				t.Errorf("no %s in:\n%s", want, cli)
			}
		})
	}
}
