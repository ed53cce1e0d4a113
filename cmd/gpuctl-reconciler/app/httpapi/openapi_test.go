package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
)

// openAPIDoc is the part of the document that the tests read.
type openAPIDoc struct {
	OpenAPI    string                                 `json:"openapi"`
	Paths      map[string]map[string]openAPIOp        `json:"paths"`
	Components struct{ Schemas map[string]schemaDoc } `json:"components"`
}

type openAPIOp struct {
	Summary    string `json:"summary"`
	Parameters []struct {
		Name, In string
	} `json:"parameters"`
	Security  []map[string]any `json:"security"`
	Responses map[string]any   `json:"responses"`
}

type schemaDoc struct {
	Properties map[string]any `json:"properties"`
	Required   []string       `json:"required"`
}

// Every route the server registers is in the document, and every operation of the document is
// a route the server registered: the fallbacks (a pattern without a method) only for a
// documented path or a subtree.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	hook := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	s, mux := newServer(Options{Kube: fake.NewClientset(clusterfixture.Objects()...), Tokens: testTokens,
		Registry: prometheus.NewRegistry(), Webhooks: map[string]http.Handler{"/hooks/github": hook, "POST /hooks/gitlab": hook}})
	var doc openAPIDoc
	readDoc(t, mux, userToken, &doc)
	if doc.OpenAPI != "3.1.0" || len(doc.Paths) < 15 {
		t.Fatalf("document: %s, %d paths", doc.OpenAPI, len(doc.Paths))
	}
	registered := map[string]bool{} // "get /api/v1/jobs/{jobId}"
	for _, pattern := range s.patterns {
		method, path, _ := splitPattern(pattern)
		if method == "" {
			if _, documented := doc.Paths[path]; !documented && !strings.HasSuffix(path, "/") && path != "/hooks/github" {
				t.Errorf("fallback %q is on a path the document lacks", pattern)
			}
			registered["* "+path] = true
			continue
		}
		registered[strings.ToLower(method)+" "+path] = true
		if _, ok := doc.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("route %q is not in the document", pattern)
		}
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if !registered[method+" "+path] && !registered["* "+path] {
				t.Errorf("the document has %s %s, which the server does not serve", method, path)
			}
			if op.Summary == "" || len(op.Responses) == 0 {
				t.Errorf("%s %s: no summary or responses", method, path)
			}
			for _, name := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' }) {
				if strings.HasPrefix(name, "{") && !slices.ContainsFunc(op.Parameters, func(p struct{ Name, In string }) bool {
					return p.In == "path" && "{"+p.Name+"}" == name
				}) {
					t.Errorf("%s %s: path parameter %s undocumented", method, path, name)
				}
			}
		}
	}
	for _, want := range []string{"get /api/v1/events", "get /api/v1/openapi.json", "post /api/v1/sync", "get /healthz", "get /", "post /hooks/github", "post /hooks/gitlab"} {
		if !registered[want] && !registered["* "+strings.SplitN(want, " ", 2)[1]] {
			t.Errorf("%s is not registered", want)
		}
	}
	if sec := doc.Paths["/healthz"]["get"].Security; sec == nil || len(sec) != 0 {
		t.Errorf("/healthz security %v, want none", sec)
	}
}

// The schemas are those of the answers' Go types: the fields of cluster.JobSummary, with
// pointers nullable and omitempty fields optional.
func TestOpenAPISchemas(t *testing.T) {
	h, _ := testServer(t)
	var doc openAPIDoc
	readDoc(t, h, teamToken, &doc)
	job, ok := doc.Components.Schemas["cluster.JobSummary"]
	if !ok {
		t.Fatalf("no cluster.JobSummary among %d schemas", len(doc.Components.Schemas))
	}
	var keys []string
	b, _ := json.Marshal(cluster.JobSummary{Queue: &cluster.QueueState{}}) // every field, the optional ones too
	var asMap map[string]any
	_ = json.Unmarshal(b, &asMap)
	for k := range asMap {
		keys = append(keys, k)
		if _, ok := job.Properties[k]; !ok {
			t.Errorf("JobSummary field %s not in the schema", k)
		}
	}
	if len(job.Properties) != len(keys) {
		t.Errorf("schema properties %v, JSON keys %v", job.Properties, keys)
	}
	started, _ := json.Marshal(job.Properties["startedAt"])
	if string(started) != `{"format":"date-time","type":["string","null"]}` {
		t.Errorf("startedAt: %s", started)
	}
	detail := doc.Components.Schemas["cluster.JobDetail"]
	if slices.Contains(detail.Required, "description") || !slices.Contains(detail.Required, "jobId") {
		t.Errorf("JobDetail required: %v", detail.Required)
	}
	drift := doc.Components.Schemas["drift.Document"]
	for _, k := range []string{"summary", "items", "history", "generated"} {
		if _, ok := drift.Properties[k]; !ok {
			t.Errorf("drift.Document lacks %s (embedded fields inlined): %v", k, drift.Properties)
		}
	}
	resp, _ := json.Marshal(doc.Paths["/api/v1/jobs/{jobId}/logs"]["get"].Responses["200"])
	for _, want := range []string{`"text/plain"`, `"application/x-ndjson"`, `cluster.LogLine`} {
		if !strings.Contains(string(resp), want) {
			t.Errorf("logs 200 lacks %s: %s", want, resp)
		}
	}
	if w := do(t, h, http.MethodGet, "/api/v1/openapi.json", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("without a token: %d", w.Code)
	}
}

// readDoc gets the document with a token and decodes the part that the tests read.
func readDoc(t *testing.T, h http.Handler, token string, doc *openAPIDoc) {
	t.Helper()
	w := do(t, h, http.MethodGet, "/api/v1/openapi.json", token)
	if err := json.Unmarshal(w.Body.Bytes(), doc); w.Code != http.StatusOK || err != nil {
		t.Fatalf("GET /api/v1/openapi.json: %d %v", w.Code, err)
	}
}
