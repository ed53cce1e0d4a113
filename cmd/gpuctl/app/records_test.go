package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// gpuctl status, sync and drift with --server, against a stub of the daemon's API that
// answers as httpapi does (its own tests, and test/e2e, hold the real handler: this package may
// not import it): an admin's token and a team's, whose status and drift are cut to its
// namespace, and whose POST sync is a 403.

const (
	adminToken = "admin-SECRET-1"
	teamToken  = "team-a-SECRET-2"
)

// recordsAPI is the daemon's records behind the stub: a status, a drift report, and syncs that
// answer a request after a few reads of the status, as the daemon's next sync would.
type recordsAPI struct {
	mu       sync.Mutex
	status   daemon.Status
	report   drift.Report
	hist     []drift.Entry
	requests int
	// answerAfter is how many reads of the status after a request still show the status of
	// before it.
	answerAfter int
	// result is the result of the sync that answers a request.
	result daemon.Result
	// driftQueries are the queries of GET drift.
	driftQueries []string
}

// readStatus is the status now: that of the sync that answers the request once answerAfter
// reads have passed.
func (b *recordsAPI) readStatus() daemon.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.requests > 0 {
		if b.answerAfter > 0 {
			b.answerAfter--
		} else if b.status.HandledThrough != "5" {
			b.status.HandledThrough, b.status.Result, b.status.Message = "5", b.result, ""
			if b.result != daemon.ResultSucceeded {
				b.status.Message = "render: teams/a/x.yaml:3:1: kind: unknown"
			}
		}
	}
	return b.status
}

// counts returns the requests made and the reads of the status left before one is answered.
func (b *recordsAPI) counts() (requests, answerAfter int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests, b.answerAfter
}

// reset makes the next request's sync end with result.
func (b *recordsAPI) reset(result daemon.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.status.HandledThrough, b.result, b.requests = "4", result, 0
}

// handler answers GET status, POST sync and GET drift as httpapi does, for the admin's token
// and team-a's ("alice").
func (b *recordsAPI) handler() http.Handler {
	answer := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	fail := func(w http.ResponseWriter, code int, msg string) {
		answer(w, code, map[string]any{"error": msg, "code": code})
	}
	// who is the caller: admin, or team-a; false for another token.
	who := func(w http.ResponseWriter, r *http.Request) (admin, ok bool) {
		switch r.Header.Get("Authorization") {
		case "Bearer " + adminToken:
			return true, true
		case "Bearer " + teamToken:
			return false, true
		}
		fail(w, http.StatusUnauthorized, "invalid bearer token")
		return false, false
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, r *http.Request) {
		admin, ok := who(w, r)
		if !ok {
			return
		}
		st := b.readStatus()
		if !admin { // httpapi's statusFor
			st.RevisionMessage = ""
			st.Errors = []string{st.Errors[0], `(1 more line about other namespaces, cluster-wide objects or the administrator's files: not shown to "alice")`}
		}
		answer(w, http.StatusOK, st)
	})
	mux.HandleFunc("POST /api/v1/sync", func(w http.ResponseWriter, r *http.Request) {
		admin, ok := who(w, r)
		if !ok {
			return
		}
		if !admin {
			fail(w, http.StatusForbidden, `POST /api/v1/sync: "alice" is not an admin`)
			return
		}
		b.mu.Lock()
		b.requests++
		b.mu.Unlock()
		answer(w, http.StatusAccepted, map[string]string{"requestId": "req-1", "version": "5"})
	})
	mux.HandleFunc("GET /api/v1/drift", func(w http.ResponseWriter, r *http.Request) {
		admin, ok := who(w, r)
		if !ok {
			return
		}
		b.mu.Lock()
		b.driftQueries = append(b.driftQueries, r.URL.RawQuery)
		b.mu.Unlock()
		since, err := time.ParseDuration(r.URL.Query().Get("since"))
		if err != nil {
			fail(w, http.StatusBadRequest, "since: want a duration such as 24h or 90m")
			return
		}
		rep, hist := b.report, b.hist
		if !admin {
			other := func(ns string) bool { return ns != "team-a" }
			rep.Items = slices.DeleteFunc(slices.Clone(rep.Items), func(it drift.Item) bool { return other(it.Object.Namespace) })
			hist = slices.DeleteFunc(slices.Clone(hist), func(e drift.Entry) bool { return other(e.Item.Object.Namespace) })
		}
		w.Header().Set("Content-Type", "application/json")
		_ = drift.WriteJSON(w, rep.Since(hist, since, time.Now()))
	})
	return mux
}

// startRecordsAPI serves the stub over a status that names objects of two teams and a drift
// report of both, and clears the environment that could name another server or a kubeconfig.
func startRecordsAPI(t *testing.T) (*recordsAPI, string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(envServer, "")
	t.Setenv(envToken, "")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	now := time.Now().UTC()
	web := drift.Item{Object: object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-a", Name: "web"},
		Category: drift.Modified, Message: "1 field differs", Detected: now.Add(-time.Hour)}
	sweep := drift.Item{Object: object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "team-b", Name: "sweep"},
		Category: drift.Shadow, Message: "4 GPUs, not in Git", GPUs: 4, Detected: now.Add(-time.Hour)}
	old := drift.Item{Object: object.Ref{Kind: "Service", Namespace: "team-a", Name: "old-svc"}, Category: drift.Deleted}
	b := &recordsAPI{
		status: daemon.Status{Source: "git https://example.com/gpus.git", Result: daemon.ResultSucceeded,
			Revision: "main@0123456789abcdef0123456789abcdef01234567", AppliedRevision: "main@0123456789abcdef0123456789abcdef01234567",
			RevisionMessage: "team-b: bigger sweep", LastAttempt: now.Add(-time.Minute), Duration: 2 * time.Second, HandledThrough: "4",
			Errors: []string{"Deployment team-a/web: apply: conflict", "Job team-b/sweep: apply: quota exceeded"}},
		report: drift.Report{Generated: now, Mode: drift.ModeReport, Revision: "0123456789abcdef", Items: []drift.Item{web, sweep}},
		hist: []drift.Entry{{Time: now.Add(-48 * time.Hour), Change: drift.Resolved, Item: old},
			{Time: now.Add(-time.Hour), Change: drift.Detected, Item: web}},
		result: daemon.ResultSucceeded,
	}
	srv := httptest.NewServer(b.handler())
	t.Cleanup(srv.Close)
	return b, srv.URL
}

// noSecret fails the test when an output shows a token.
func noSecret(t *testing.T, outputs ...string) {
	t.Helper()
	for _, out := range outputs {
		if strings.Contains(out, "SECRET") {
			t.Errorf("an output shows a token:\n%s", out)
		}
	}
}

// TestStatusWithServer: gpuctl status --server prints the daemon's status as the kubeconfig's
// ConfigMap would; a team's token sees only what concerns its namespaces; $GPUCTL_SERVER and
// $GPUCTL_TOKEN name the server as the flags do.
func TestStatusWithServer(t *testing.T) {
	_, url := startRecordsAPI(t)

	out, errOut, code := runDriftCommand(t, "status", "--server", url, "--token", adminToken)
	if code != 0 {
		t.Fatalf("admin: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"Source:", "git https://example.com/gpus.git", "main@0123456789ab  team-b: bigger sweep",
		"  Deployment team-a/web: apply: conflict\n", "  Job team-b/sweep: apply: quota exceeded\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("admin's status lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^Result: +Succeeded$`).MatchString(out) {
		t.Errorf("admin's status has no Result line:\n%s", out)
	}

	out, errOut, code = runDriftCommand(t, "status", "--server", url, "--token", teamToken)
	if code != 0 || !strings.Contains(out, "Deployment team-a/web") || strings.Contains(out, "team-b") ||
		!strings.Contains(out, `(1 more line about other namespaces, cluster-wide objects or the administrator's files: not shown to "alice")`) {
		t.Errorf("team's status: exit %d\n%s%s", code, out, errOut)
	}

	t.Setenv(envServer, url)
	t.Setenv(envToken, adminToken)
	out, errOut, code = runDriftCommand(t, "status", "-o", "json")
	var st daemon.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Revision != "main@0123456789abcdef0123456789abcdef01234567" || st.HandledThrough != "4" {
		t.Errorf("$GPUCTL_SERVER, -o json: exit %d, %+v\n%s%s", code, st, out, errOut)
	}
	// -n chooses the kubeconfig (none here), as --reconciler-namespace does for the read verbs;
	// with --server it is refused.
	if _, errOut, code := runDriftCommand(t, "status", "--server", url, "-n", "ops"); code != ExitTrouble ||
		!strings.Contains(errOut, "give --server or --kubeconfig/--context/--namespace, not both") {
		t.Errorf("--server with -n: exit %d, %s", code, errOut)
	}
	t.Setenv(envToken, "wrong")
	if _, errOut, code := runDriftCommand(t, "status"); code != ExitTrouble || !strings.Contains(errOut, "the token was refused") {
		t.Errorf("a refused token: exit %d, %s", code, errOut)
	}
	noSecret(t, out, errOut)
}

// TestSyncWithServer: gpuctl sync --server asks with POST /api/v1/sync and waits, reading the
// status, for the sync that answers the request; its result is the exit code. A team's token
// is refused (403), plainly, and asks for nothing.
func TestSyncWithServer(t *testing.T) {
	b, url := startRecordsAPI(t)
	b.answerAfter = 2 // two reads of the status still show the sync before the request

	out, errOut, code := runDriftCommand(t, "sync", "--server", url, "--token", adminToken, "--timeout", "20s")
	if requests, left := b.counts(); code != 0 || requests != 1 || left != 0 || !regexp.MustCompile(`(?m)^Result: +Succeeded$`).MatchString(out) {
		t.Errorf("admin's sync: exit %d, %d requests, %d reads left\n%s%s", code, requests, left, out, errOut)
	}

	b.reset(daemon.ResultInvalid)
	out, errOut, code = runDriftCommand(t, "sync", "--server", url, "--token", adminToken, "--timeout", "20s")
	if code != ExitFailed || !strings.Contains(errOut, "error: sync invalid: render: teams/a/x.yaml:3:1: kind: unknown") {
		t.Errorf("an invalid revision: exit %d (want %d)\n%s%s", code, ExitFailed, out, errOut)
	}

	b.reset(daemon.ResultSucceeded)
	out, errOut, code = runDriftCommand(t, "sync", "--server", url, "--token", teamToken)
	want := `403 Forbidden: POST /api/v1/sync: "alice" is not an admin: only an admin's token may ask for a sync (gpuctl status shows the last one)`
	if requests, _ := b.counts(); code != ExitTrouble || !strings.Contains(errOut, want) || requests != 0 || out != "" {
		t.Errorf("team's sync: exit %d, %d requests, stderr lacks %q:\n%s%s", code, requests, want, out, errOut)
	}
	noSecret(t, out, errOut)

	if _, errOut, code := runDriftCommand(t, "sync", "--local", ".", "--server", url); code != ExitTrouble || !strings.Contains(errOut, "give one") {
		t.Errorf("--local with --server: exit %d, %s", code, errOut)
	}
}

// TestDriftWithServer: gpuctl drift --server prints the daemon's report with the history of
// --since (days included), a team's token sees the drift of its namespaces, and --exit-code
// and -o work as with the kubeconfig.
func TestDriftWithServer(t *testing.T) {
	b, url := startRecordsAPI(t)

	out, errOut, code := runDriftCommand(t, "drift", "--server", url, "--token", adminToken, "--exit-code")
	if code != ExitFailed || !strings.Contains(out, "2 drifted: 1 modified, 1 shadow (4 GPUs)") || !strings.Contains(out, "History (1 change)") ||
		strings.Contains(out, "old-svc") {
		t.Errorf("admin, --since 24h, --exit-code: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runDriftCommand(t, "drift", "--server", url, "--token", adminToken, "--since", "3d")
	if code != 0 || !strings.Contains(out, "History (2 changes)") || !strings.Contains(out, "old-svc") {
		t.Errorf("admin, --since 3d: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = runDriftCommand(t, "drift", "--server", url, "--token", teamToken, "--since", "0", "-o", "json")
	var doc drift.Document
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("team, -o json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if len(doc.Items) != 1 || doc.Items[0].Object.Name != "web" || len(doc.History) != 2 || doc.Summary != "1 drifted: 1 modified" {
		t.Errorf("team's report: %+v", doc)
	}
	// --since goes as a Go duration, which the API parses (days are not one).
	b.mu.Lock()
	defer b.mu.Unlock()
	if want := []string{"since=24h0m0s", "since=72h0m0s", "since=0s"}; !slices.Equal(b.driftQueries, want) {
		t.Errorf("queries of GET drift %q, want %q", b.driftQueries, want)
	}
	noSecret(t, out, errOut)
}

// TestNoKubeconfigNamesServer: every command that takes --server says, when no kubeconfig is
// found, that --server or $GPUCTL_SERVER is the other way.
func TestNoKubeconfigNamesServer(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(envServer, "")
	t.Setenv(envToken, "")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv(options.EnvPrometheusURL, "http://127.0.0.1:1") // top and idle want one before the cluster
	// extra are the arguments a command needs to reach the cluster.
	extra := map[string][]string{"events": {"-A"}}
	var withServer []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Flags().Lookup("server") != nil {
			withServer = append(withServer, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(Streams{Out: new(strings.Builder), Err: new(strings.Builder)}))
	names := map[string]bool{}
	for _, c := range withServer {
		path := strings.Fields(c.CommandPath())[1:]
		names[strings.Join(path, " ")] = true
		args := slices.Clone(path)
		if c.ValidateArgs(nil) != nil {
			args = append(args, "x")
		}
		args = append(args, extra[strings.Join(path, " ")]...)
		t.Run(strings.Join(path, "_"), func(t *testing.T) {
			_, errOut, code := runDriftCommand(t, args...)
			if code != ExitTrouble || !strings.Contains(errOut, "no kubeconfig found") || !strings.Contains(errOut, "--server URL") ||
				!strings.Contains(errOut, "$"+envServer) {
				t.Errorf("gpuctl %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
			}
		})
	}
	for _, want := range []string{"status", "sync", "drift", "get jobs", "events", "logs", "describe job"} {
		if !names[want] {
			t.Errorf("gpuctl %s takes no --server (commands with it: %v)", want, names)
		}
	}
}
