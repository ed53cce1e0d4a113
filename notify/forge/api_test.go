package forge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

const testSHA = "0123456789abcdef0123456789abcdef01234567"

// fakeForge is a forge's documented status API: it checks each request's method, path,
// headers and JSON exactly, answers 201, and records the bodies it took.
type fakeForge struct {
	t       *testing.T
	path    string            // the escaped path expected
	headers map[string]string // expected headers
	mu      sync.Mutex
	bodies  []map[string]any
}

func (f *fakeForge) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		f.t.Errorf("method %s, want POST", req.Method)
	}
	if got := req.URL.EscapedPath(); got != f.path {
		f.t.Errorf("path %s, want %s", got, f.path)
	}
	for k, v := range f.headers {
		if got := req.Header.Get(k); got != v {
			f.t.Errorf("header %s: %q, want %q", k, got, v)
		}
	}
	var body map[string]any
	b, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		f.t.Errorf("body %s: %v", b, err)
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":1}`))
}

// got returns the bodies taken so far.
func (f *fakeForge) got() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

// startReporter returns a Reporter of o posting to srv, its Run stopped at the test's end.
func startReporter(t *testing.T, o Options, gitURL string, srv *httptest.Server) *Reporter {
	t.Helper()
	if o.TokenFile == "" {
		o.TokenFile = writeToken(t, "tok-1234567890\n")
	}
	if srv != nil && o.APIURL == "" {
		o.APIURL = srv.URL + "/api"
	}
	r, err := New(o, gitURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// flush waits for r's queue to empty, for at most 10 s.
func flush(t *testing.T, r *Reporter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestForges(t *testing.T) {
	type testCase struct {
		gitURL  string
		opts    Options
		path    string
		headers map[string]string
		want    []map[string]any // the bodies of a pending, a success and a failure
	}
	json := map[string]string{"Content-Type": "application/json"}
	with := func(h map[string]string) map[string]string {
		for k, v := range json {
			h[k] = v
		}
		return h
	}
	cases := map[string]testCase{
		"github": {
			gitURL: "git@github.com:acme/gpu-jobs.git",
			opts:   Options{Context: "gpuctl/prod", TargetURL: "https://gpuctl.example.com/status"},
			path:   "/api/repos/acme/gpu-jobs/statuses/" + testSHA,
			headers: with(map[string]string{"Authorization": "Bearer tok-1234567890",
				"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}),
			want: []map[string]any{
				{"state": "pending", "target_url": "https://gpuctl.example.com/status", "description": "syncing", "context": "gpuctl/prod"},
				{"state": "success", "target_url": "https://gpuctl.example.com/status", "description": "applied: 3 created, 1 updated", "context": "gpuctl/prod"},
				{"state": "failure", "target_url": "https://gpuctl.example.com/status", "description": "failed: teams/alice/sft.yaml:12: unknown field", "context": "gpuctl/prod"},
			},
		},
		"gitlab": {
			gitURL:  "https://gitlab.com/acme/ml/gpu-jobs.git",
			path:    "/api/projects/acme%2Fml%2Fgpu-jobs/statuses/" + testSHA,
			headers: with(map[string]string{"PRIVATE-TOKEN": "tok-1234567890", "Authorization": ""}),
			want: []map[string]any{
				{"state": "running", "name": "gpuctl", "description": "syncing"},
				{"state": "success", "name": "gpuctl", "description": "applied: 3 created, 1 updated"},
				{"state": "failed", "name": "gpuctl", "description": "failed: teams/alice/sft.yaml:12: unknown field"},
			},
		},
		"gitea": {
			gitURL:  "ssh://git@git.example.com:2222/acme/gpu-jobs.git",
			opts:    Options{Kind: Gitea, TargetURL: "https://gpuctl.example.com/"},
			path:    "/api/repos/acme/gpu-jobs/statuses/" + testSHA,
			headers: with(map[string]string{"Authorization": "token tok-1234567890"}),
			want: []map[string]any{
				{"state": "pending", "target_url": "https://gpuctl.example.com/", "description": "syncing", "context": "gpuctl"},
				{"state": "success", "target_url": "https://gpuctl.example.com/", "description": "applied: 3 created, 1 updated", "context": "gpuctl"},
				{"state": "failure", "target_url": "https://gpuctl.example.com/", "description": "failed: teams/alice/sft.yaml:12: unknown field", "context": "gpuctl"},
			},
		},
		"bitbucket": {
			gitURL:  "https://user:app-pass@bitbucket.org/acme/gpu-jobs.git",
			opts:    Options{Context: "gpuctl/prod"},
			path:    "/api/repositories/acme/gpu-jobs/commit/" + testSHA + "/statuses/build",
			headers: with(map[string]string{"Authorization": "Bearer tok-1234567890"}),
			want: []map[string]any{
				{"key": "gpuctl/prod", "state": "INPROGRESS", "name": "gpuctl/prod", "url": "https://bitbucket.org/acme/gpu-jobs", "description": "syncing"},
				{"key": "gpuctl/prod", "state": "SUCCESSFUL", "name": "gpuctl/prod", "url": "https://bitbucket.org/acme/gpu-jobs", "description": "applied: 3 created, 1 updated"},
				{"key": "gpuctl/prod", "state": "FAILED", "name": "gpuctl/prod", "url": "https://bitbucket.org/acme/gpu-jobs", "description": "failed: teams/alice/sft.yaml:12: unknown field"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fake := &fakeForge{t: t, path: tc.path, headers: tc.headers}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := startReporter(t, tc.opts, tc.gitURL, srv)
			for _, s := range []struct {
				state State
				desc  string
			}{
				{StatePending, "syncing"},
				{StateSuccess, "applied: 3 created, 1 updated"},
				{StateFailure, "failed: teams/alice/sft.yaml:12: unknown field"},
			} {
				r.Report(testSHA, s.state, s.desc)
				flush(t, r) // one at a time: a newer status would replace a queued one
			}
			if got := fake.got(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("bodies\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

func TestDefaultAPIURLs(t *testing.T) {
	cases := map[string]struct {
		gitURL string
		kind   Kind
		want   string
	}{
		"github":           {"https://github.com/a/b", "", "https://api.github.com"},
		"gitlab":           {"git@gitlab.com:a/b/c.git", "", "https://gitlab.com/api/v4"},
		"bitbucket":        {"git@bitbucket.org:a/b.git", "", "https://api.bitbucket.org/2.0"},
		"gitea https":      {"https://git.example.com:3000/a/b.git", Gitea, "https://git.example.com:3000/api/v1"},
		"gitea ssh":        {"ssh://git@git.example.com:2222/a/b.git", Gitea, "https://git.example.com/api/v1"},
		"gitea sub-path":   {"https://example.com/gitea/a/b.git", Gitea, "https://example.com/gitea/api/v1"},
		"forgejo scp-like": {"git@codeberg.org:a/b.git", Gitea, "https://codeberg.org/api/v1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := New(Options{Kind: tc.kind, TokenFile: writeToken(t, "tok")}, tc.gitURL)
			if err != nil {
				t.Fatal(err)
			}
			if r.apiURL != tc.want {
				t.Errorf("API URL %s, want %s", r.apiURL, tc.want)
			}
		})
	}
}

func TestDescriptionTrimmed(t *testing.T) {
	long := "failed: teams/alice/sft.yaml:12:\n" + strings.Repeat("é", 300)
	cases := map[Kind]int{GitHub: 140, GitLab: 255}
	for kind, limit := range cases {
		got := []rune(trim(long, apis[kind].descLimit))
		if len(got) != limit || got[len(got)-1] != '…' {
			t.Errorf("%s: %d characters ending %q, want %d ending with …", kind, len(got), got[len(got)-1], limit)
		}
		if strings.ContainsRune(string(got), '\n') {
			t.Errorf("%s: description holds a line break", kind)
		}
	}
	if got := trim("applied: 3 created", 140); got != "applied: 3 created" {
		t.Errorf("short description changed: %q", got)
	}
}
