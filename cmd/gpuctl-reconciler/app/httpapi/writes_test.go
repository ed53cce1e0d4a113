package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/sources"
	"github.com/prometheus/client_golang/prometheus"
)

// recordingWriter answers writes with err, or with a commit of a job of the request, and
// records the requests. (The daemon's writes, against a Git server and the cluster, are tested
// in cmd/gpuctl-reconciler/app.)
type recordingWriter struct {
	mu   sync.Mutex
	reqs []daemon.WriteRequest
	err  error
}

func (w *recordingWriter) Write(_ context.Context, req daemon.WriteRequest) (*daemon.WriteResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reqs = append(w.reqs, req)
	if w.err != nil {
		return nil, w.err
	}
	name := req.Job.Name
	if req.Verb == daemon.VerbCreate {
		name = "sft"
	}
	res := &edit.Result{Verb: req.Verb, Replicas: req.Replicas, Workloads: []edit.Workload{{Kind: "training", Name: name, Namespace: "alice", File: "teams/alice/" + name + ".yaml"}}}
	return &daemon.WriteResult{Edit: res, Commit: "4f9c2a71d0e8aaaabbbbccccddddeeeeffff0000", Branch: "main", Dir: "clusters/prod",
		Files: []string{"clusters/prod/teams/alice/" + name + ".yaml"}, Attempts: 1}, nil
}

func writeServer(t *testing.T, w Writer) http.Handler {
	t.Helper()
	return New(Options{Tokens: testTokens, Registry: prometheus.NewRegistry(), Writer: w})
}

func send(t *testing.T, h http.Handler, method, path, token, contentType, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestWritesAnswerTheSeedsFields(t *testing.T) {
	rw := &recordingWriter{}
	h := writeServer(t, rw)
	w := send(t, h, http.MethodPost, "/api/v1/jobs", teamToken, "application/json", `{"yamlContent": "kind: training\n", "namespace": "alice"}`)
	if w.Code != http.StatusCreated {
		t.Fatalf("code %d: %s", w.Code, w.Body)
	}
	var got JobWriteResponse
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.JobID != "alice.sft" || got.Name != "sft" || got.Namespace != "alice" || got.Kind != "training" || got.Status != "pending" ||
		got.Path != "clusters/prod/teams/alice/sft.yaml" || got.Commit == "" || got.CreatedAt.IsZero() || !strings.Contains(got.Message, "committed 4f9c2a71d0e8 to main") {
		t.Errorf("answer %+v", got)
	}
	req := rw.reqs[0]
	if req.Verb != daemon.VerbCreate || req.Namespace != "alice" || req.By.Name != "alice" || req.By.Admin || len(req.By.Namespaces) != 1 ||
		len(req.Files) != 1 || req.Files[0].Name != "yamlContent" || req.Files[0].Target != "-" {
		t.Errorf("request %+v", req)
	}

	// The file as an application/yaml body, the rest in the query.
	w = send(t, h, http.MethodPost, "/api/v1/jobs?namespace=alice&fileName=x.yaml", teamToken, "application/yaml", "kind: training\n")
	if w.Code != http.StatusCreated || string(rw.reqs[1].Files[0].Data) != "kind: training\n" || rw.reqs[1].Files[0].Target != "x.yaml" {
		t.Errorf("yaml body: %d %s %+v", w.Code, w.Body, rw.reqs[1])
	}

	for _, c := range []struct{ method, path, body, status string }{
		{http.MethodDelete, "/api/v1/jobs/alice.sft", "", "terminating"},
		{http.MethodPost, "/api/v1/jobs/sft/pause?namespace=alice", "", "paused"},
		{http.MethodPost, "/api/v1/jobs/alice.sft/resume", "", "pending"},
		{http.MethodPost, "/api/v1/jobs/alice.sft/scale", `{"replicas": 3}`, "pending"},
	} {
		w := send(t, h, c.method, c.path, teamToken, "", c.body)
		var got JobWriteResponse
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || got.Status != c.status || got.JobID != "alice.sft" {
			t.Errorf("%s %s: %d %s", c.method, c.path, w.Code, w.Body)
		}
		if req := rw.reqs[len(rw.reqs)-1]; req.Job != (edit.JobRef{Namespace: "alice", Name: "sft"}) {
			t.Errorf("%s %s: job %+v", c.method, c.path, req.Job)
		}
	}
	if req := rw.reqs[len(rw.reqs)-1]; req.Verb != daemon.VerbScale || req.Replicas != 3 {
		t.Errorf("scale: %+v", req)
	}

	w = send(t, h, http.MethodPost, "/api/v1/jobs/batch", adminToken, "", `{"yamlContents": ["a: 1\n", "b: 2\n"], "path": "jobs"}`)
	var batch BatchResponse
	if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &batch) != nil || len(batch.Success) != 1 || batch.Failed == nil {
		t.Fatalf("batch: %d %s", w.Code, w.Body)
	}
	if req := rw.reqs[len(rw.reqs)-1]; len(req.Files) != 2 || req.Files[1].Name != "yamlContents[1]" || req.Path != "jobs" || !req.By.Admin {
		t.Errorf("batch request %+v", req)
	}
}

// TestPostTheSeedsBody (issue 35): the seed's body, the file and nothing else, reaches the
// daemon as it is: where a file without a namespace goes is the daemon's to decide
// (daemon.TestWriteWithoutANamespace), and the answer carries the seed's fields.
func TestPostTheSeedsBody(t *testing.T) {
	rw := &recordingWriter{}
	w := send(t, writeServer(t, rw), http.MethodPost, "/api/v1/jobs", adminToken, "application/json",
		`{"yamlContent": "kind: training\nversion: v0.1\njob:\n  name: qwen2-7b-sft\n"}`)
	if w.Code != http.StatusCreated {
		t.Fatalf("code %d: %s", w.Code, w.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"jobId", "name", "kind", "status", "createdAt", "message"} { // seed 001 §7.2.1
		if v, ok := got[field].(string); !ok || v == "" {
			t.Errorf("field %s: %v", field, got[field])
		}
	}
	if req := rw.reqs[0]; req.Namespace != "" || req.Path != "" || !req.By.Admin || len(req.Files) != 1 {
		t.Errorf("request %+v", req)
	}
}

// TestWriteErrors: each error of a write has its status code; invalid files list every
// diagnostic; a failed push says nothing was written.
func TestWriteErrors(t *testing.T) {
	invalid := render.NewValidationError([]*render.Diagnostic{
		{Severity: render.SeverityError, File: "yamlContent", Line: 3, Column: 5, Field: "job.name", Message: "required"},
		{Severity: render.SeverityError, File: "yamlContent", Line: 7, Column: 3, Field: "resources.gpu", Message: "not an integer"},
	})
	cases := map[string]struct {
		err  error
		code int
	}{
		"forbidden":   {&daemon.ForbiddenError{Reason: `"alice" may not write in namespace "bob"`}, http.StatusForbidden},
		"writes off":  {&daemon.WritesDisabledError{Reason: "start with --git-push"}, http.StatusMethodNotAllowed},
		"push":        {&sources.PushError{Remote: "https://git.example.com/x.git", Err: errors.New("pre-receive hook declined")}, http.StatusServiceUnavailable},
		"invalid":     {&daemon.EditError{Err: invalid}, http.StatusBadRequest},
		"not found":   {&daemon.EditError{Err: &edit.NotFoundError{Ref: edit.JobRef{Name: "x"}}}, http.StatusNotFound},
		"exists":      {&daemon.EditError{Err: &edit.NameExistsError{Input: "yamlContent"}}, http.StatusConflict},
		"file there":  {&daemon.EditError{Err: &edit.FileExistsError{Path: "teams/alice/sft.yaml"}}, http.StatusConflict},
		"unchanged":   {&daemon.EditError{Err: &edit.UnchangedError{Reason: "is already paused"}}, http.StatusConflict},
		"ambiguous":   {&daemon.EditError{Err: &edit.AmbiguousError{Name: "sft"}}, http.StatusBadRequest},
		"path":        {&daemon.EditError{Err: &edit.PathError{Path: "../x", Reason: "must be clean"}}, http.StatusBadRequest},
		"uncheckable": {&sources.UncheckableError{Remote: "https://git.example.com/x.git", Revision: "4f9c2a71d0e8aaaabbbbccccddddeeeeffff0000", Path: "teams/alice/.GIT", Reason: "is .git"}, http.StatusConflict},
		"internal":    {errors.New("disk on fire"), http.StatusInternalServerError},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := writeServer(t, &recordingWriter{err: c.err})
			w := send(t, h, http.MethodPost, "/api/v1/jobs", adminToken, "", `{"yamlContent": "kind: training\n", "namespace": "alice"}`)
			e := wantError(t, w, c.code)
			if name == "uncheckable" && !strings.Contains(e.Message, `4f9c2a71d0e8 cannot be checked out: path "teams/alice/.GIT"`) {
				t.Errorf("message %q", e.Message)
			}
			if c.code == http.StatusServiceUnavailable && !strings.HasPrefix(e.Message, "nothing was written: push to https://git.example.com/x.git") {
				t.Errorf("message %q", e.Message)
			}
			if c.code == http.StatusBadRequest && name == "invalid" {
				if len(e.Diagnostics) != 2 || e.Diagnostics[1].Line != 7 || !strings.Contains(e.Message, "yamlContent:3:5: job.name: required") {
					t.Errorf("diagnostics %+v, message %q", e.Diagnostics, e.Message)
				}
			}
		})
	}
}

// TestWriteRequestsRefused: bad requests never reach the writer.
func TestWriteRequestsRefused(t *testing.T) {
	huge := fmt.Sprintf(`{"yamlContent": %q}`, strings.Repeat("# padding\n", MaxWriteBody/10+1))
	cases := map[string]struct {
		method, path, contentType, body string
		code                            int
	}{
		"no body":            {http.MethodPost, "/api/v1/jobs", "", "", http.StatusBadRequest},
		"not JSON":           {http.MethodPost, "/api/v1/jobs", "", "kind: training", http.StatusBadRequest},
		"unknown field":      {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1", "team": "bob"}`, http.StatusBadRequest},
		"two objects":        {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1"} {}`, http.StatusBadRequest},
		"empty file":         {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "  "}`, http.StatusBadRequest},
		"huge body":          {http.MethodPost, "/api/v1/jobs", "", huge, http.StatusRequestEntityTooLarge},
		"huge yaml body":     {http.MethodPost, "/api/v1/jobs", "application/yaml", strings.Repeat("#\n", MaxWriteBody), http.StatusRequestEntityTooLarge},
		"file over 1 MiB":    {http.MethodPost, "/api/v1/jobs", "", fmt.Sprintf(`{"yamlContent": %q}`, strings.Repeat("#", render.MaxFileSize+1)), http.StatusRequestEntityTooLarge},
		"empty batch":        {http.MethodPost, "/api/v1/jobs/batch", "", `{"yamlContents": []}`, http.StatusBadRequest},
		"traversal in jobId": {http.MethodDelete, "/api/v1/jobs/..%2F..%2Fetc", "", "", http.StatusBadRequest},
		"dotted jobId":       {http.MethodPost, "/api/v1/jobs/a.b.c/pause", "", "", http.StatusBadRequest},
		"bad namespace":      {http.MethodPost, "/api/v1/jobs/sft/pause?namespace=../bob", "", "", http.StatusBadRequest},
		"no replicas":        {http.MethodPost, "/api/v1/jobs/alice.sft/scale", "", `{}`, http.StatusBadRequest},
		"negative replicas":  {http.MethodPost, "/api/v1/jobs/alice.sft/scale", "", `{"replicas": -1}`, http.StatusBadRequest},
		"no token":           {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1"}`, http.StatusUnauthorized},
		".GIT path":          {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1", "path": "teams/alice/.GIT"}`, http.StatusBadRequest},
		".git path":          {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1", "path": "teams/alice/.git"}`, http.StatusBadRequest},
		"dot directory":      {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1", "path": "teams/alice/.x"}`, http.StatusBadRequest},
		"GIT~1 path":         {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1", "path": "teams/alice/GIT~1"}`, http.StatusBadRequest},
		".git. path":         {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1", "path": "teams/alice/.git."}`, http.StatusBadRequest},
		"HFS+ .git path":     {http.MethodPost, "/api/v1/jobs", "", `{"yamlContent": "x: 1", "path": "teams/alice/.g\u200cit"}`, http.StatusBadRequest},
		".GIT path in YAML":  {http.MethodPost, "/api/v1/jobs?path=teams/alice/.GIT", "application/yaml", "x: 1", http.StatusBadRequest},
		".GIT path of batch": {http.MethodPost, "/api/v1/jobs/batch", "", `{"yamlContents": ["x: 1"], "path": "teams/alice/.GIT"}`, http.StatusBadRequest},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rw := &recordingWriter{}
			token := adminToken
			if name == "no token" {
				token = ""
			}
			wantError(t, send(t, writeServer(t, rw), c.method, c.path, token, c.contentType, c.body), c.code)
			if len(rw.reqs) != 0 {
				t.Errorf("the writer was asked: %+v", rw.reqs)
			}
		})
	}
}
