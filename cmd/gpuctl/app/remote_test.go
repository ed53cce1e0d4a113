package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuctl/gpuctl/cluster"
)

// The client against a stub of the API's answers; test/e2e runs it against the real daemon.

const testToken = "tok-SECRET-123"

// stubAPI answers like the daemon's API: 1,203 jobs in pages, typed errors, JSON log lines.
func stubAPI(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	var seen []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.RequestURI())
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
		var items []string
		for i := (page - 1) * size; i < min(page*size, 1203); i++ {
			items = append(items, fmt.Sprintf(`{"jobId":"ns.j%04d"}`, i))
		}
		fmt.Fprintf(w, `{"total":1203,"page":%d,"pageSize":%d,"items":[%s]}`, page, size, strings.Join(items, ","))
	})
	errorAnswer := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}
	}
	mux.Handle("GET /api/v1/jobs/bob.llm", errorAnswer(404, `{"error":"unknown job \"bob.llm\"","code":404,"notFound":{"kind":"job","name":"bob.llm"}}`))
	mux.Handle("GET /api/v1/jobs/dup", errorAnswer(400, `{"error":"x","code":400,"ambiguous":{"name":"dup","ids":["a.dup","b.dup"]}}`))
	mux.Handle("GET /api/v1/nodes", errorAnswer(400, `{"error":"x","code":400,"filter":{"field":"status","message":"want Ready or NotReady, got \"x\""}}`))
	mux.Handle("GET /api/v1/jobs/a.nb/logs", errorAnswer(404, `{"error":"x","code":404,"noLogs":{"jobId":"a.nb","status":"Pending","pods":0}}`))
	mux.Handle("GET /api/v1/quotas", errorAnswer(401, `{"error":"invalid bearer token","code":401}`))
	mux.Handle("GET /api/v1/pools", errorAnswer(500, `{"error":"list nodes: boom","code":500}`))
	mux.HandleFunc("GET /api/v1/jobs/a.sft/logs", func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.RequestURI()+" "+r.Header.Get("Accept")+" "+r.Header.Get("Authorization"))
		fmt.Fprintln(w, `{"pod":"sft-0","container":"main","prefix":"rank-0","text":"loss 0.5"}`)
		fmt.Fprintln(w, `{"pod":"sft-1","container":"main","prefix":"rank-1","text":"loss 0.6"}`)
	})
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.RequestURI())
		fmt.Fprint(w, `{"items":[]}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestRemoteModelPagesAndErrors(t *testing.T) {
	srv, seen := stubAPI(t)
	m, err := newRemoteModel(srv.URL+"/", testToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	all, err := m.Jobs(ctx, cluster.JobFilter{Status: "running"})
	if err != nil || all.Total != 1203 || len(all.Items) != 1203 || all.Page != 1 || all.PageSize != 0 || all.Items[1202].JobID != "ns.j1202" {
		t.Fatalf("every job: total %d, %d items, page %d/%d, %v", all.Total, len(all.Items), all.Page, all.PageSize, err)
	}
	if want := []string{"/api/v1/jobs?page=1&pageSize=500&status=running", "/api/v1/jobs?page=2&pageSize=500&status=running",
		"/api/v1/jobs?page=3&pageSize=500&status=running"}; !reflect.DeepEqual(*seen, want) {
		t.Errorf("requests %v, want %v", *seen, want)
	}
	*seen = nil
	page, _ := m.Jobs(ctx, cluster.JobFilter{Page: cluster.Page{Number: 3, Size: 10}})
	if len(page.Items) != 10 || page.Items[0].JobID != "ns.j0020" || len(*seen) != 1 {
		t.Errorf("page 3 of 10: %+v after %v", page, *seen)
	}
	big, _ := m.Jobs(ctx, cluster.JobFilter{Page: cluster.Page{Number: 2, Size: 1000}})
	if len(big.Items) != 203 || big.Items[0].JobID != "ns.j1000" || big.Page != 2 || big.PageSize != 1000 {
		t.Errorf("page 2 of 1000: %d items from %s", len(big.Items), big.Items[0].JobID)
	}

	_, err = m.Job(ctx, "bob.llm")
	if nf := (*cluster.NotFoundError)(nil); !errors.As(err, &nf) || err.Error() != `unknown job "bob.llm"` {
		t.Errorf("not found: %v", err)
	}
	_, err = m.Job(ctx, "dup")
	if amb := (*cluster.AmbiguousError)(nil); !errors.As(err, &amb) || !strings.Contains(err.Error(), "use one of a.dup, b.dup") {
		t.Errorf("ambiguous: %v", err)
	}
	_, err = m.Nodes(ctx, cluster.NodeFilter{Status: "x"})
	if fe := (*cluster.FilterError)(nil); !errors.As(err, &fe) || fe.Field != "status" {
		t.Errorf("filter: %v", err)
	}
	err = m.Logs(ctx, "a.nb", cluster.DefaultLogOptions(), func(cluster.LogLine) error { return nil })
	if nl := (*cluster.NoLogsError)(nil); !errors.As(err, &nl) || Code(readError(err)) != ExitFailed {
		t.Errorf("no logs: %v", err)
	}
	_, err401 := m.Quotas(ctx)
	_, err500 := m.Pools(ctx)
	for _, err := range []error{err401, err500} {
		if err == nil || !strings.Contains(err.Error(), "server http://127.0.0.1") || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("error %v", err)
		}
	}
	if !strings.Contains(err401.Error(), "the token was refused") || !strings.Contains(err500.Error(), "500 Internal Server Error: list nodes: boom") {
		t.Errorf("errors: %v; %v", err401, err500)
	}

	*seen = nil
	var lines []cluster.LogLine
	opts := cluster.LogOptions{Tail: 5, Since: 90 * time.Second, Grep: "loss", AllPods: true}
	if err := m.Logs(ctx, "a.sft", opts, func(l cluster.LogLine) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[1] != (cluster.LogLine{Pod: "sft-1", Container: "main", Prefix: "rank-1", Text: "loss 0.6"}) {
		t.Errorf("lines %+v", lines)
	}
	if want := "/api/v1/jobs/a.sft/logs?allPods=true&grep=loss&since=1m30s&tail=5 application/x-ndjson Bearer " + testToken; (*seen)[0] != want {
		t.Errorf("request %q, want %q", (*seen)[0], want)
	}
	if err := m.Logs(ctx, "a.sft", cluster.LogOptions{Follow: true, Previous: true}, nil); !errors.As(err, new(*cluster.FilterError)) {
		t.Errorf("follow with previous: %v", err)
	}
	*seen = nil
	if _, err := m.Events(ctx, "alice"); err != nil || (*seen)[0] != "/api/v1/events?namespace=alice" {
		t.Errorf("events: %v %v", err, *seen)
	}

	down, _ := newRemoteModel("http://127.0.0.1:1", testToken)
	if _, err := down.Pools(ctx); err == nil || strings.Contains(err.Error(), "SECRET") || !strings.HasPrefix(err.Error(), "server http://127.0.0.1:1: ") || strings.Contains(err.Error(), "/api/v1") {
		t.Errorf("server down: %v", err)
	}
	for _, bad := range []string{"gpuctl.example.com", "ftp://x", "http://"} {
		if _, err := newRemoteModel(bad, testToken); err == nil {
			t.Errorf("server %q accepted", bad)
		}
	}
}

// The flags, the environment and the config file choose the model; the config file's token
// goes only to its own server.
func TestReadOptionsChooseTheModel(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv(envServer, "")
	t.Setenv(envToken, "")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	writeConfig := func(content string, mode os.FileMode) {
		t.Helper()
		dir := filepath.Join(cfgHome, "gpuctl")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config"), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, "config"), mode); err != nil {
			t.Fatal(err)
		}
	}
	choose := func(args ...string) (cluster.Model, string, error) {
		var o readOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		var warn strings.Builder
		m, err := o.Model(&warn)
		return m, warn.String(), err
	}
	remote := func(m cluster.Model) string {
		if r, ok := m.(*remoteModel); ok {
			return r.base.String() + " " + r.token
		}
		return fmt.Sprintf("%T", m)
	}

	// No server anywhere: the kubeconfig (none here: exit 2).
	if _, _, err := choose(); err == nil || Code(err) != ExitTrouble || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("no server, no kubeconfig: %v", err)
	}
	// --server without a token.
	if _, _, err := choose("--server", "https://api.example"); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("no token: %v", err)
	}
	// A password in the server's URL is never echoed, nor is one in a URL that is refused.
	for _, server := range []string{"https://ops:s3cret@api.example", "ftp://ops:s3cret@api.example"} {
		if _, _, err := choose("--server", server); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("--server %s: %v", server, err)
		}
		if _, _, err := choose("--server", server, "--token", testToken); err == nil && strings.HasPrefix(server, "ftp") || err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("--server %s --token: %v", server, err)
		}
	}
	m, _, err := choose("--server", "https://api.example/gpuctl", "--token", testToken)
	if err != nil || remote(m) != "https://api.example/gpuctl/api/v1/ "+testToken {
		t.Errorf("flags: %s %v", remote(m), err)
	}
	t.Setenv(envToken, "env-token")
	if m, _, _ := choose("--server", "https://api.example"); remote(m) != "https://api.example/api/v1/ env-token" {
		t.Errorf("$GPUCTL_TOKEN: %s", remote(m))
	}
	t.Setenv(envToken, "")

	writeConfig("server: https://cfg.example\ntoken: cfg-token\n", 0o600)
	if m, warn, err := choose(); remote(m) != "https://cfg.example/api/v1/ cfg-token" || warn != "" || err != nil {
		t.Errorf("config file: %s %q %v", remote(m), warn, err)
	}
	// The config file's token is not sent to another server.
	if _, _, err := choose("--server", "https://elsewhere.example"); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("another server got the config's token: %v", err)
	}
	// --kubeconfig wins over the config file's server, and cannot go with --server.
	if m, _, _ := choose("--kubeconfig", "/nonexistent"); m != nil {
		t.Errorf("--kubeconfig: %s", remote(m))
	}
	if _, _, err := choose("--kubeconfig", "k", "--server", "https://x.example"); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("both: %v", err)
	}
	// --reconciler-namespace is the kubeconfig's reader's: it too chooses the kubeconfig.
	if m, _, _ := choose("--reconciler-namespace", "ops"); m != nil {
		t.Errorf("--reconciler-namespace: %s", remote(m))
	}
	if _, _, err := choose("--reconciler-namespace", "ops", "--server", "https://x.example"); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("--reconciler-namespace with --server: %v", err)
	}
	t.Setenv(envServer, "https://cfg.example")
	if m, _, _ := choose(); remote(m) != "https://cfg.example/api/v1/ cfg-token" {
		t.Errorf("$GPUCTL_SERVER of the config's server: %s", remote(m))
	}
	t.Setenv(envServer, "")

	writeConfig("server: https://cfg.example\ntoken: cfg-token\n", 0o644)
	if _, warn, _ := choose(); !strings.Contains(warn, "readable by others (mode 0644): chmod 600") || strings.Contains(warn, "cfg-token") {
		t.Errorf("group/world-readable config: %q", warn)
	}
	writeConfig("server: https://cfg.example\ntokn: cfg-token\n", 0o600)
	if _, _, err := choose(); err == nil || !strings.Contains(err.Error(), "gpuctl/config:2: field tokn not found in the config file") || strings.Contains(err.Error(), "cfg-token") {
		t.Errorf("a typo: %v", err)
	}
}
