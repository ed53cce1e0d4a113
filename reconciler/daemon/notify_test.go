package daemon_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/notify"
	"github.com/gpuctl/gpuctl/notify/forge"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// sent records the Events a daemon sends.
type sent struct{ notify.Recorder }

// take returns the Events sent since the last take.
func (s *sent) take() []notify.Event { return s.Take() }

// invalidCompute is a file that render refuses (resources.gpu: -1).
const invalidCompute = "kind: compute\nversion: v0.1\njob: {name: api}\nenvironment: {image: nginx}\nresources: {gpu: -1}\n"

// TestSyncAlertsHeldTeamsAndEvents: a failed sync sends SyncFailed (Key "sync", the cluster's,
// with its errors), each time it fails again (the dispatcher dedupes), and the next good sync
// SyncRecovered; a held team gets a SyncFailed of its namespace, recovered when its files
// apply again; each sync's result is a Kubernetes Event on the status ConfigMap.
func TestSyncAlertsHeldTeamsAndEvents(t *testing.T) {
	alice, bob := "notify-alice", "notify-bob"
	quota := "kind: quota\nversion: v0.1\nmetadata: {name: teams}\nusers:\n  " + alice + ": {cpu: 1, memory: 1Gi, gpu: 0}\n  " + bob + ": {cpu: 1, memory: 1Gi, gpu: 0}\n"
	alerts := &sent{}
	events := record.NewBroadcaster()
	t.Cleanup(events.Shutdown)
	var h *harness
	h = newHarness(t, "notify", map[string]string{
		".gpuctl.yaml":                holdConfig,
		"quotas/teams.yaml":           quota,
		"teams/" + alice + "/cm.yaml": configMap("settings", "a1"),
		"teams/" + bob + "/cm.yaml":   configMap("settings", "b1"),
	}, func(o *daemon.Options) {
		o.Alerts = alerts
		o.Recorder = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "gpuctl-reconciler"})
	})
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: h.kube.CoreV1().Events("")})
	run := func(want daemon.Result) daemon.Status {
		t.Helper()
		st := h.d.SyncOnce(h.ctx, "")
		if st.Result != want {
			t.Fatalf("sync: %s (%s), want %s", st.Result, st.Message, want)
		}
		return st
	}
	run(daemon.ResultSucceeded)
	if got := alerts.take(); len(got) != 1 || got[0].Reason != notify.SyncRecovered || !got[0].Resolved || got[0].Key != "sync" {
		t.Errorf("a good sync sent %+v, want one SyncRecovered (dropped by the dispatcher: nothing is open)", got)
	}

	h.write("api.yaml", invalidCompute)
	for i := range 4 {
		st := run(daemon.ResultInvalid)
		got := alerts.take()
		if len(got) != 1 {
			t.Fatalf("failed sync %d sent %+v, want one SyncFailed", i, got)
		}
		e := got[0]
		if e.Reason != notify.SyncFailed || e.Key != "sync" || e.Namespace != "" || e.Severity != notify.SeverityError || e.Resolved ||
			e.Revision != st.Revision || len(e.Details) != 1 || !strings.HasPrefix(e.Details[0], "api.yaml:5:18: resources.gpu") ||
			!strings.Contains(e.Message, "invalid") {
			t.Errorf("failed sync %d: %+v", i, e)
		}
	}
	if err := os.Remove(filepath.Join(h.dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	run(daemon.ResultSucceeded)
	if got := alerts.take(); len(got) != 1 || got[0].Reason != notify.SyncRecovered || !got[0].Resolved || got[0].Key != "sync" || got[0].Namespace != "" {
		t.Errorf("the recovery sent %+v, want one SyncRecovered of the cluster", got)
	}

	// bob's file is refused: bob is held, the rest applies
	h.write("teams/"+bob+"/widget.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: root}\n")
	if st := run(daemon.ResultSucceeded); len(st.Held) != 1 {
		t.Fatalf("held %+v, want %s", st.Held, bob)
	}
	var teamFailed *notify.Event
	for _, e := range alerts.take() {
		if e.Namespace == bob {
			teamFailed = &e
		}
	}
	if e := teamFailed; e == nil || e.Reason != notify.SyncFailed || e.Key != "sync" || len(e.Details) == 0 ||
		!strings.HasPrefix(e.Details[0], "teams/"+bob+"/widget.yaml") {
		t.Errorf("held team: %+v, want a SyncFailed of %s with its file's error", e, bob)
	}
	if err := os.Remove(filepath.Join(h.dir, "teams", bob, "widget.yaml")); err != nil {
		t.Fatal(err)
	}
	run(daemon.ResultSucceeded)
	var teamRecovered bool
	for _, e := range alerts.take() {
		teamRecovered = teamRecovered || (e.Namespace == bob && e.Reason == notify.SyncRecovered && e.Resolved && e.Key == "sync")
	}
	if !teamRecovered {
		t.Error("no SyncRecovered of the team once its files apply again")
	}

	// Kubernetes Events on the status ConfigMap
	deadline := time.Now().Add(15 * time.Second)
	for {
		list, err := h.kube.CoreV1().Events(h.ns).List(h.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]string{}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "ConfigMap" && e.InvolvedObject.Name == "gpuctl-status" {
				found[e.Reason] = e.Type
			}
		}
		if found[daemon.ReasonSyncSucceeded] == corev1.EventTypeNormal && found[daemon.ReasonSyncFailed] == corev1.EventTypeWarning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Events on gpuctl-status in %s: %v, want SyncSucceeded (Normal) and SyncFailed (Warning)", h.ns, found)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFailedSyncSlackAndWebhookOverSyncs is the bar over the daemon's syncs, with the
// real Dispatcher: a failed sync sends one Slack message and one signed generic webhook (the
// signature checked here), 20 failing syncs in a row no more, the recovery one more each.
func TestFailedSyncSlackAndWebhookOverSyncs(t *testing.T) {
	type post struct {
		body   []byte
		header http.Header
	}
	var mu sync.Mutex
	posts := map[string][]post{}
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts[r.URL.Path] = append(posts[r.URL.Path], post{b, r.Header.Clone()})
		mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "hmac")
	if err := os.WriteFile(secretFile, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := notify.ParseConfig("gpuctl-alerts.yaml", []byte("version: v0.1\nproviders:\n  - name: ops-slack\n    type: slack\n    url: "+rc.URL+
		"/slack\n  - name: hook\n    type: webhook\n    url: "+rc.URL+"/hook\n    secretFile: "+secretFile+"\nroutes:\n  - provider: ops-slack\n  - provider: hook\n"))
	if err != nil {
		t.Fatal(err)
	}
	disp := notify.NewDispatcher(cfg, notify.DispatcherOptions{Cluster: "prod"})
	t.Cleanup(disp.Close)
	h := newHarness(t, "notify-bar", map[string]string{"web.yaml": compute("bar-web", "default", 1)},
		func(o *daemon.Options) { o.Alerts = disp })
	flushed := func(wantSlack, wantHook int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
		defer cancel()
		if err := disp.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(posts["/slack"]) != wantSlack || len(posts["/hook"]) != wantHook {
			t.Fatalf("%d Slack messages and %d webhooks, want %d and %d", len(posts["/slack"]), len(posts["/hook"]), wantSlack, wantHook)
		}
	}
	if st := h.d.SyncOnce(h.ctx, ""); st.Result != daemon.ResultSucceeded {
		t.Fatalf("first sync: %+v", st)
	}
	flushed(0, 0)
	h.write("api.yaml", invalidCompute)
	for range 20 {
		if st := h.d.SyncOnce(h.ctx, ""); st.Result != daemon.ResultInvalid {
			t.Fatalf("sync: %s", st.Result)
		}
	}
	flushed(1, 1)
	if err := os.Remove(filepath.Join(h.dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	if st := h.d.SyncOnce(h.ctx, ""); st.Result != daemon.ResultSucceeded {
		t.Fatalf("recovery: %+v", st)
	}
	flushed(2, 2)
	for i, want := range []string{"SyncFailed", "SyncRecovered"} {
		if s := string(posts["/slack"][i].body); !strings.Contains(s, "[prod] ") || !strings.Contains(s, want) {
			t.Errorf("Slack message %d: %s", i, s)
		}
		p := posts["/hook"][i]
		mac := hmac.New(sha256.New, []byte("k3y"))
		mac.Write(p.body)
		if !hmac.Equal([]byte(p.header.Get("X-Gpuctl-Signature")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil)))) ||
			p.header.Get("X-Gpuctl-Event") != want {
			t.Errorf("webhook %d: headers %v", i, p.header)
		}
		var e notify.Event
		if err := json.Unmarshal(p.body, &e); err != nil || e.Reason != notify.Reason(want) || e.Key != "sync" {
			t.Errorf("webhook %d: %s (%v)", i, p.body, err)
		}
	}
}

// githubStub answers GitHub's POST /repos/{owner}/{repo}/statuses/{sha} and records each
// status; while hang is set it answers nothing until the request is cancelled.
type githubStub struct {
	*httptest.Server
	hang     atomic.Bool
	mu       sync.Mutex
	statuses map[string][]map[string]string // by sha
}

func newGitHubStub(t *testing.T) *githubStub {
	s := &githubStub{statuses: map[string][]map[string]string{}}
	released := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.hang.Load() {
			select {
			case <-r.Context().Done():
			case <-released:
			}
			return
		}
		sha, ok := strings.CutPrefix(r.URL.Path, "/repos/acme/gpu-jobs/statuses/")
		var body map[string]string
		if r.Method != http.MethodPost || !ok || r.Header.Get("Authorization") == "" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.statuses[sha] = append(s.statuses[sha], body)
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(released) }) // before Close, which waits for the handlers
	return s
}

func (s *githubStub) last(sha string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.statuses[sha]; len(l) > 0 {
		return l[len(l)-1]
	}
	return nil
}

// TestCommitStatusesOnTheForge: after each sync of a Git source the commit gets its status on
// the forge (a GitHub stub): success on a good commit's SHA, failure on a bad one's with the
// file's error; a forge that hangs delays no sync.
func TestCommitStatusesOnTheForge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gh := newGitHubStub(t)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("ghp_test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := forge.New(forge.Options{Kind: forge.GitHub, APIURL: gh.URL, TokenFile: token, Context: "gpuctl/test",
		Retry: forge.RetryOptions{Initial: 50 * time.Millisecond}, HTTPClient: &http.Client{Timeout: 30 * time.Second}},
		"https://github.com/acme/gpu-jobs.git")
	if err != nil {
		t.Fatal(err)
	}
	go rep.Run(ctx)
	g := newGitHarness(t, ctx, "sys-git-forge", func(o *daemon.Options) { o.Statuses = rep })
	flush := func() {
		t.Helper()
		fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
		defer fcancel()
		if err := rep.Flush(fctx); err != nil {
			t.Fatal(err)
		}
	}
	// The daemon reports after it records the status that the harness waited for: wait for
	// the report too, then for its post.
	posted := func(sha string) map[string]string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			flush()
			if s := gh.last(sha); s != nil {
				return s
			}
		}
		return nil
	}
	if s := posted(g.first); s["state"] != "success" || !strings.HasPrefix(s["description"], "applied: ") || s["context"] != "gpuctl/test" {
		t.Errorf("the good commit's status: %v", s)
	}

	bad := g.remote.Commit("break", map[string]string{"jobs/api.yaml": invalidCompute})
	g.push("hook-secret")
	g.h.waitStatus("the bad commit", func(s daemon.Status) bool { return s.Revision == bad && s.Result == daemon.ResultInvalid })
	if s := posted(bad); s["state"] != "failure" || !strings.HasPrefix(s["description"], "failed: api.yaml:5:18: resources.gpu") {
		t.Errorf("the bad commit's status: %v", s)
	}
	if s := gh.last(g.first); s["state"] != "success" {
		t.Errorf("the good commit's status changed: %v", s)
	}

	// the forge hangs: the next commit is applied as fast
	gh.hang.Store(true)
	fixed := g.remote.Commit("fix", map[string]string{"jobs/api.yaml": compute("git-api", "default", 1)})
	pushed := time.Now()
	g.push("hook-secret")
	st := g.h.waitStatus("the fixed commit", func(s daemon.Status) bool { return s.AppliedRevision == fixed })
	// A post that waited on the hanging forge would take its client's 30 s timeout.
	if took := time.Since(pushed); took > 25*time.Second || st.Duration > 15*time.Second {
		t.Errorf("with a hanging forge the commit took %s to apply (sync %s)", took, st.Duration)
	}
}
