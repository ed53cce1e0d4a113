package daemon_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	gitsource "github.com/gpuctl/gpuctl/sources/git"
	"github.com/gpuctl/gpuctl/test/gittest"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestGitCommitsWebhooksAndOutages: commits pushed to a real Git server (git http-backend) are
// applied on a signed webhook; a badly signed webhook is refused and fetches nothing; a
// force-push converges; while the server is down the last good revision stays applied and the
// status says why.
func TestGitCommitsWebhooksAndOutages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newGitHarness(t, ctx, "sys-git")
	remote, src, fetches, h, push, kube := g.remote, g.src, g.fetches, g.h, g.push, g.h.kube
	first := g.first
	_ = src

	// a new commit, announced with a bad signature: refused, nothing fetched
	second := remote.Commit("scale web", map[string]string{"jobs/web.yaml": compute("git-web", "default", 2)})
	before := fetches.Load()
	if code := push("wrong-secret"); code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", code)
	}
	time.Sleep(500 * time.Millisecond)
	if fetches.Load() != before {
		t.Fatal("a badly signed webhook caused a fetch")
	}
	start := time.Now()
	if code := push("hook-secret"); code != http.StatusAccepted {
		t.Fatalf("good signature: %d", code)
	}
	h.waitStatus("second commit", func(s daemon.Status) bool { return s.AppliedRevision == second })
	t.Logf("webhook to applied: %s", time.Since(start).Round(time.Millisecond))

	// a force-push that rewrites history: the cluster follows the new history
	remote.Git("reset", "-q", "--hard", first)
	remote.Write(map[string]string{"jobs/api.yaml": compute("git-api", "default", 1)})
	remote.Git("add", "-A")
	remote.Git("commit", "-q", "-m", "rewrite: api instead of scaling web")
	remote.Git("push", "-q", "--force", "origin", "HEAD:refs/heads/main")
	rewritten := remote.Git("rev-parse", "HEAD")
	push("hook-secret")
	h.waitStatus("rewritten history", func(s daemon.Status) bool { return s.AppliedRevision == rewritten })
	web, err := kube.AppsV1().Deployments("default").Get(ctx, "git-web", metav1.GetOptions{})
	if err != nil || *web.Spec.Replicas != 1 {
		t.Fatalf("after the force-push web should be back at 1 replica: %v", err)
	}
	if _, err := kube.AppsV1().Deployments("default").Get(ctx, "git-api", metav1.GetOptions{}); err != nil {
		t.Fatalf("api from the rewritten history: %v", err)
	}

	// the server goes away: the last good revision stays, the status says why
	g.down.Store(true)
	remote.Write(map[string]string{"jobs/api.yaml": ""})
	push("hook-secret")
	st := h.waitStatus("fetch failure", func(s daemon.Status) bool { return s.Result == daemon.ResultFetchFailed })
	if !strings.Contains(st.Message, remote.URL) || !strings.Contains(st.Message, "stays applied") || st.AppliedRevision != rewritten {
		t.Fatalf("status during the outage: %+v", st)
	}
	if _, err := kube.AppsV1().Deployments("default").Get(ctx, "git-api", metav1.GetOptions{}); err != nil {
		t.Fatalf("an outage changed the cluster: %v", err)
	}
}

// gitHarness is a daemon over a Git repository served by git http-backend, woken by a
// GitHub webhook.
type gitHarness struct {
	remote  *gittest.Remote
	src     *gitsource.Source
	fetches *atomic.Int64
	down    *atomic.Bool
	// hang makes the server accept every request and answer none until release is called.
	hang    *atomic.Bool
	release func()
	h       *harness
	first   string
	push    func(key string) int
}

// newGitHarness starts a daemon over a new repository, its status in namespace ns, and waits
// for its first commit to be applied; each of with changes the daemon's options.
func newGitHarness(t testing.TB, ctx context.Context, ns string, with ...func(*daemon.Options)) *gitHarness {
	g := &gitHarness{fetches: &atomic.Int64{}, down: &atomic.Bool{}, hang: &atomic.Bool{}}
	down, hang, released := g.down, g.hang, make(chan struct{})
	g.release = sync.OnceFunc(func() { hang.Store(false); close(released) })
	g.remote = gittest.New(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hang.Load() {
				select {
				case <-released:
				case <-r.Context().Done():
				}
				return
			}
			if down.Load() {
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	t.Cleanup(g.release) // before the server's Close, which waits for its handlers
	g.first = g.remote.Commit("add web", map[string]string{"jobs/web.yaml": compute("git-web", "default", 1)})
	cfg := testcluster.Current().RESTConfig()
	kube := kubernetes.NewForConfigOrDie(cfg)
	opts := reconciler.DefaultOptions()
	opts.Namespace, opts.MaxPrune = ns, 1
	engine, err := reconciler.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	gopts := gitsource.DefaultOptions(g.remote.URL, "main")
	gopts.Path, gopts.Interval = "jobs", 0 // webhooks only
	if g.src, err = gitsource.New(gopts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.src.Close() })
	store := daemon.NewStore(kube, ns)
	o := daemon.Options{Source: countingSource{g.src, g.fetches}, Engine: engine, Store: store,
		Interval: time.Hour, MinBackoff: time.Hour, Identity: "git"}
	for _, f := range with {
		f(&o)
	}
	d := daemon.New(o)
	go func() { _ = d.Run(ctx) }()
	g.h = &harness{t: t, ctx: ctx, store: store, kube: kube, d: d}
	g.h.waitStatus("first commit", func(s daemon.Status) bool { return s.AppliedRevision == g.first })

	secret := filepath.Join(t.TempDir(), "hook")
	if err := os.WriteFile(secret, []byte("hook-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := httptest.NewServer(gitsource.NewWebhookHandler(gitsource.WebhookGitHub, secret, g.src, nil))
	t.Cleanup(hooks.Close)
	g.push = func(key string) int {
		code, err := gittest.PostGitHubPush(t.Context(), hooks.URL, key, "refs/heads/main")
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	return g
}

// TestSlowFetchIsShown (issue 32, finding 4): while a Git server accepts the fetch and does not
// answer, the status shows since when the daemon has been fetching, once it has lasted longer
// than SlowFetch: in the status ConfigMap (gpuctl status, a standby) and in the leader's memory
// (GET /api/v1/status); once the fetch has ended, the sync's status clears it. Before, the
// status said nothing until the whole --sync-timeout had passed.
func TestSlowFetchIsShown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newGitHarness(t, ctx, "sys-git-slow", func(o *daemon.Options) { o.SlowFetch = 300 * time.Millisecond })
	second := g.remote.Commit("scale web", map[string]string{"jobs/web.yaml": compute("git-web", "default", 2)})
	g.hang.Store(true)
	pushed := time.Now()
	g.push("hook-secret")
	st := g.h.waitStatus("the slow fetch in the status", func(s daemon.Status) bool { return !s.FetchingSince.IsZero() })
	if st.FetchingSince.Before(pushed) || st.AppliedRevision != g.first || st.Result != daemon.ResultSucceeded {
		t.Errorf("status during the fetch: fetching since %s (pushed at %s), applied %s, result %s; want the fetch after the push, the first commit applied",
			st.FetchingSince, pushed, st.AppliedRevision, st.Result)
	}
	mem, err := g.h.d.Status(ctx)
	if err != nil || mem.FetchingSince.IsZero() {
		t.Errorf("the leader's status from memory during the fetch: fetching since %s, %v", mem.FetchingSince, err)
	}
	g.release()
	g.push("hook-secret") // the fetch that hung may have failed: the next one applies the commit
	st = g.h.waitStatus("the commit applied", func(s daemon.Status) bool { return s.AppliedRevision == second })
	if mem, _ := g.h.d.Status(ctx); !st.FetchingSince.IsZero() || !mem.FetchingSince.IsZero() {
		t.Errorf("after the fetch the status still shows it: fetching since %s (in memory %s)", st.FetchingSince, mem.FetchingSince)
	}
}
