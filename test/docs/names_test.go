package docs

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	reconcilerapp "github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app"
	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	gpuctlapp "github.com/gpuctl/gpuctl/cmd/gpuctl/app"
)

// knownFlags are the flags of every command of gpuctl and gpuctl-reconciler, by program.
func knownFlags() map[string]map[string]bool {
	collect := func(root *cobra.Command) map[string]bool {
		set := map[string]bool{"help": true}
		var walk func(*cobra.Command)
		walk = func(c *cobra.Command) {
			add := func(f *pflag.Flag) { set[f.Name] = true }
			c.Flags().VisitAll(add)
			c.PersistentFlags().VisitAll(add)
			c.InheritedFlags().VisitAll(add)
			for _, sub := range c.Commands() {
				walk(sub)
			}
		}
		root.InitDefaultCompletionCmd()
		walk(root)
		return set
	}
	return map[string]map[string]bool{
		progGpuctl:     collect(gpuctlapp.NewRootCommand(gpuctlapp.Streams{Out: io.Discard, Err: io.Discard})),
		progReconciler: collect(reconcilerapp.NewCommand()),
	}
}

// loneFlagDocs are the documents whose code spans that are a flag alone are flags of gpuctl or
// gpuctl-reconciler: elsewhere one may be kubectl's or kustomize's.
var loneFlagDocs = map[string]bool{"docs/cli.md": true, "docs/daemon.md": true}

// Every flag that the docs give gpuctl or gpuctl-reconciler is one of theirs.
func TestDocsNameExistingFlags(t *testing.T) {
	known := knownFlags()
	if len(known[progGpuctl]) < 30 || len(known[progReconciler]) < 30 || !known[progGpuctl]["server"] || !known[progReconciler]["source"] {
		t.Fatalf("the command trees look empty: %d gpuctl flags, %d gpuctl-reconciler flags", len(known[progGpuctl]), len(known[progReconciler]))
	}
	var ps []problem
	n := 0
	for _, d := range docs(t) {
		fs := flagsIn(d.Text, loneFlagDocs[d.Name])
		n += len(fs)
		ps = append(ps, checkFlags(d, fs, known)...)
	}
	if n < 100 {
		t.Errorf("only %d flags named in the docs: the scan misses them", n)
	}
	t.Logf("%d flags named in the docs", n)
	report(t, ps)
}

// routeTable is the route table of gpuctl-reconciler's API, as its OpenAPI document lists it.
func routeTable(t *testing.T) map[string]bool {
	t.Helper()
	h := httpapi.New(httpapi.Options{Tokens: anyToken{}, Registry: prometheus.NewRegistry()})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer docs")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/openapi.json: %d %s", rec.Code, rec.Body)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	table := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			table[routeKey(method, path)] = true
		}
	}
	if !table["GET /api/v1/jobs/{}"] || !table["POST /api/v1/sync"] {
		t.Fatalf("the OpenAPI document lacks the jobs or sync: %v", table)
	}
	return table
}

// anyToken is a TokenSource that takes every token as an admin's.
type anyToken struct{}

func (anyToken) Lookup(string) (httpapi.Principal, bool) {
	return httpapi.Principal{Name: "docs", Admin: true}, true
}

// Every route of the API that the docs name is served.
func TestDocsNameExistingRoutes(t *testing.T) {
	table := routeTable(t)
	var ps []problem
	n := 0
	for _, d := range docs(t) {
		n += len(routesIn(d.Text))
		ps = append(ps, checkRoutes(d, table)...)
	}
	if n < 20 {
		t.Errorf("only %d routes named in the docs: the scan misses them", n)
	}
	t.Logf("%d routes named in the docs", n)
	report(t, ps)
}

// The checks find a flag that no command has and a route that the table lacks, in code spans,
// code blocks and tables, and let through what is right and what is another tool's.
func TestChecksFindBrokenNames(t *testing.T) {
	known := knownFlags()
	broken := doc{Name: "broken.md", Text: strings.Join([]string{
		"Run `gpuctl get jobs -A --no-such-flag` or `gpuctl get jobs -o wide`.", // 1
		"```sh",                                  // 2
		"$ gpuctl logs job -f --tail 5 --tale 5", // 3
		"gpuctl-reconciler --source=dir:. \\",    // 4
		"  --no-such-daemon-flag",                // 5
		"kubectl apply --server-side -f x.yaml  # kubectl's flag, not gpuctl's", // 6
		"gpuctl version # --not-a-flag in a comment",                            // 7
		"```",                         // 8
		"| `--listen` | `--lissen` |", // 9
		"| `GET /api/v1/jobs/{id}/metrics` | `GET /api/v1/jobz` | `POST /api/v1/jobs/{jobId}/pause` |", // 10
		"`GET /api/v1/namespaces/x/pods/y/log` is Kubernetes'.",                                        // 11
	}, "\n")}
	ps := append(checkFlags(broken, flagsIn(broken.Text, true), known), checkRoutes(broken, routeTable(t))...)
	sortProblems(ps)
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := []string{
		"broken.md:1: --no-such-flag is not a flag of any command of gpuctl",
		"broken.md:3: --tale is not a flag of any command of gpuctl",
		"broken.md:4: --no-such-daemon-flag is not a flag of any command of gpuctl-reconciler",
		"broken.md:9: --lissen is not a flag of any command of gpuctl or gpuctl-reconciler",
		"broken.md:10: GET /api/v1/jobz is not a route of gpuctl-reconciler's API (its OpenAPI document)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
