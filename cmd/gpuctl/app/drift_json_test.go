package app

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/prometheus/client_golang/prometheus"
)

// driftBackend is a daemon that only has a drift report.
type driftBackend struct {
	r    drift.Report
	hist []drift.Entry
}

func (driftBackend) Status(context.Context) (daemon.Status, error)  { return daemon.Status{}, nil }
func (driftBackend) RequestSync(context.Context) (string, error)    { return "", nil }
func (driftBackend) Plan(context.Context) (*reconciler.Plan, error) { return nil, nil }
func (b driftBackend) Drift(context.Context) (drift.Report, []drift.Entry, error) {
	return b.r, b.hist, nil
}

// oneToken knows the token "tok".
type oneToken struct{}

func (oneToken) Lookup(t string) (httpapi.Principal, bool) {
	return httpapi.Principal{Name: "reader"}, t == "tok"
}

// TestDriftJSONIsTheAPIDocument: gpuctl drift -o json prints byte for byte what GET
// /api/v1/drift answers for the same report and history: one shape, summary included.
func TestDriftJSONIsTheAPIDocument(t *testing.T) {
	r, hist := driftFixture()
	for name, b := range map[string]driftBackend{"drift": {r, hist}, "empty": {}} {
		t.Run(name, func(t *testing.T) {
			var cli bytes.Buffer
			if err := printDrift(&cli, b.r, b.hist, "json", 0, driftNow); err != nil {
				t.Fatal(err)
			}
			h := httpapi.New(httpapi.Options{Tokens: oneToken{}, Backend: b, Registry: prometheus.NewRegistry()})
			req := httptest.NewRequest(http.MethodGet, "/api/v1/drift?since=0", nil)
			req.Header.Set("Authorization", "Bearer tok")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET /api/v1/drift: %d %s", rec.Code, rec.Body)
			}
			if api := rec.Body.String(); api != cli.String() {
				t.Errorf("gpuctl drift -o json differs from GET /api/v1/drift:\n--- cli\n%s\n--- api\n%s", cli.String(), api)
			}
			if want := `"summary": "` + b.r.Summary() + `"`; !strings.Contains(cli.String(), want) {
				t.Errorf("no %s in:\n%s", want, cli.String())
			}
		})
	}
}
