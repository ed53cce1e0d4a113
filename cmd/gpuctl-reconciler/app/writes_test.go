package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/gittest"
	"github.com/gpuctl/gpuctl/test/testcluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The API's writes against the real daemon (NewCommand, in this process), a Git repository
// served by git http-backend and the local cluster.

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{})) }

// Tokens of the write tests.
const (
	opsToken   = "ops-secret"
	aliceToken = "alice-secret"
	noneToken  = "none-secret"
)

// team is a test's team (a namespace of its own, so that the tests' daemons share no object).
type team struct{ alice, bob string }

func newTeam(prefix string) team { return team{alice: prefix + "-alice", bob: prefix + "-bob"} }

// quota declares the teams' namespaces (an admin's file).
func (tm team) quota() string {
	return fmt.Sprintf("kind: quota\nversion: v0.1\nmetadata: {name: teams}\nusers:\n  %s: {cpu: 100, memory: 200Gi, gpu: 0}\n  %s: {cpu: 100, memory: 200Gi, gpu: 0}\n", tm.alice, tm.bob)
}

// training is a training job's file; ns "" leaves job.namespace out.
func training(name, ns string) string {
	job := "{name: " + name + "}"
	if ns != "" {
		job = "{name: " + name + ", namespace: " + ns + "}"
	}
	return "kind: training\nversion: v0.1\njob: " + job + "\nenvironment:\n  image: registry.example.com/train:v1\n  command: [python, train.py]\nresources: {cpu: 1, memory: 1Gi}\n"
}

// writeDaemon is a gpuctl-reconciler running in this process, and its API.
type writeDaemon struct {
	t      testing.TB
	url    string
	ns     string
	kube   kubernetes.Interface
	store  *daemon.Store
	cancel context.CancelFunc
}

// startWriteDaemon runs gpuctl-reconciler with args (and the cluster, a token file, a port, a
// status namespace of its own) until the test ends, and waits for its first sync.
func startWriteDaemon(t testing.TB, tm team, args ...string) *writeDaemon {
	t.Helper()
	return startDaemon(t, tm, &Options{}, args...)
}

// startDaemon is startWriteDaemon over o (its fields that no flag sets).
func startDaemon(t testing.TB, tm team, o *Options, args ...string) *writeDaemon {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	lines := fmt.Sprintf("%s,ops,admin\n%s,alice,namespaces=%s\n%s,nobody\n", opsToken, aliceToken, tm.alice, noneToken)
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ns := "sys-" + tm.alice
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newCommand(o)
	cmd.SetArgs(append([]string{"--kubeconfig", testcluster.Current().Kubeconfig, "--namespace", ns, "--listen", addr,
		"--tokens-file", tokens, "--namespace-map", "teams/*/**=$1", "--max-prune", "100%", "--memory-limit", "0",
		"--log-level", "warn", "--interval", "1h"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	d := &writeDaemon{t: t, url: "http://" + addr, ns: ns, kube: kube, store: daemon.NewStore(kube, ns), cancel: cancel}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gpuctl-reconciler: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("gpuctl-reconciler did not stop")
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-done:
			t.Fatalf("gpuctl-reconciler exited: %v", err)
		default:
		}
		if resp, err := http.Get(d.url + "/readyz"); err == nil {
			resp.Body.Close()
			// ready, and not only because the loop has not started yet
			if st, _, err := d.store.Read(ctx); resp.StatusCode == http.StatusOK && err == nil && st.Result != daemon.ResultPending {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("gpuctl-reconciler not ready in 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, _, err := d.store.Read(ctx); err != nil || st.Result != daemon.ResultSucceeded {
		t.Fatalf("first sync: %+v %v", st, err)
	}
	return d
}

// call sends a request with a token and a JSON body (nil: none) and decodes the answer into out
// (when not nil); it returns the status code and the body.
func (d *writeDaemon) call(method, path, token string, body any, out any) (int, string) {
	d.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			d.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.url+path, r)
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			d.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode, string(data)
}

// create posts a file as a token and returns the answer.
func (d *writeDaemon) create(token, file string) (int, httpapi.JobWriteResponse, string) {
	d.t.Helper()
	var out httpapi.JobWriteResponse
	code, body := d.call(http.MethodPost, "/api/v1/jobs", token, httpapi.CreateRequest{YAMLContent: file}, nil)
	if code < 300 {
		_ = json.Unmarshal([]byte(body), &out)
	}
	return code, out, body
}

// waitJob waits until the Job ns/name satisfies ok (nil: exists; a nil Job: it is gone).
func (d *writeDaemon) waitJob(ns, name string, what string, ok func(exists bool, suspended bool) bool) time.Duration {
	d.t.Helper()
	start := time.Now()
	for {
		j, err := d.kube.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		exists := err == nil && j.DeletionTimestamp == nil
		if err != nil && !apierrors.IsNotFound(err) {
			d.t.Fatal(err)
		}
		if ok(exists, exists && j.Spec.Suspend != nil && *j.Spec.Suspend) {
			return time.Since(start)
		}
		if time.Since(start) > 30*time.Second {
			st, _, _ := d.store.Read(context.Background())
			d.t.Fatalf("Job %s/%s: not %s within 30 s; daemon status %+v", ns, name, what, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func exists(e, _ bool) bool    { return e }
func gone(e, _ bool) bool      { return !e }
func suspended(_, s bool) bool { return s }

// gitRemote is a repository served by git http-backend whose next push can be preceded by
// someone else's (race), with the daemon's URL (holding credentials that must never show).
type gitRemote struct {
	*gittest.Remote
	race    atomic.Bool
	mu      sync.Mutex
	authURL string
}

func newGitRemote(t testing.TB, tm team) *gitRemote {
	g := &gitRemote{}
	g.Remote = gittest.New(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/git-receive-pack") && g.race.CompareAndSwap(true, false) {
				g.pushOther("someone else's commit", map[string]string{"notes/other.md": "pushed during the write\n"})
			}
			h.ServeHTTP(w, r)
		})
	})
	g.Commit("the teams", map[string]string{"quotas/quota.yaml": tm.quota(), "teams/" + tm.bob + "/bob-sft.yaml": training("bob-sft", "")})
	g.authURL = strings.Replace(g.URL, "http://", "http://ci:s3cret-pass@", 1)
	return g
}

// pushOther pushes a commit of someone else on top of the remote's main.
func (g *gitRemote) pushOther(msg string, files map[string]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Git("fetch", "-q", "origin", "main")
	g.Git("reset", "-q", "--hard", "FETCH_HEAD")
	g.Commit(msg, files)
}

func (g *gitRemote) head() string { return g.Run(g.Bare, "rev-parse", "main") }

// TestAPIWritesWithAGitSource: POST commits a job to its team's directory and pushes it, and the
// sync it triggers creates the Job; pause suspends it, DELETE removes it; another team's
// namespace or directory is 403 and a token without namespaces may not write (no commit);
// invalid files are 400 with every file:line:col, a name that exists 409; a push that meets a
// moved branch is made again and lands; one the remote refuses is 503, and the clone is the
// remote's head; 20 concurrent writes are 20 commits.
func TestAPIWritesWithAGitSource(t *testing.T) {
	tm := newTeam("wg")
	g := newGitRemote(t, tm)
	workDir := filepath.Join(t.TempDir(), "clone")
	d := startWriteDaemon(t, tm, "--source", "git:"+g.authURL, "--ref", "main", "--git-push", "--git-poll-interval", "0", "--work-dir", workDir)

	// Create: a commit by alice in her directory, and the Job.
	code, got, body := d.create(aliceToken, training("sft", ""))
	if code != http.StatusCreated || got.JobID != tm.alice+".sft" || got.Status != "pending" || got.Path != "teams/"+tm.alice+"/sft.yaml" || got.Commit != g.head() {
		t.Fatalf("create: %d %s (remote at %s)", code, body, g.head())
	}
	if a := g.Run(g.Bare, "log", "-1", "--format=%an <%ae>|%cn|%s", "main"); a != "alice <alice@gpuctl>|gpuctl-reconciler|gpuctl: create training sft (alice)" {
		t.Errorf("commit: %s", a)
	}
	t.Logf("POST -> Job created: %s", d.waitJob(tm.alice, "sft", "created", exists).Round(time.Millisecond))

	// Refused: nothing is committed.
	before := g.head()
	for name, c := range map[string]struct {
		method, path, token string
		body                any
		code                int
	}{
		"another namespace in the file": {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("x", tm.bob)}, 403},
		"another namespace asked":       {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("x", ""), Namespace: tm.bob}, 403},
		"another team's directory":      {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("x", ""), Path: "teams/" + tm.bob}, 403},
		"an admin directory":            {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("x", ""), Path: "quotas"}, 403},
		"a traversal to another team":   {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("x", ""), Path: "teams/" + tm.alice + "/../" + tm.bob}, 400},
		"a traversal by an admin":       {"POST", "/api/v1/jobs", opsToken, httpapi.CreateRequest{YAMLContent: training("x", ""), Path: "teams/../../etc"}, 400},
		"a file name with a directory":  {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("x", ""), FileName: "../../" + tm.bob + "/x.yaml"}, 400},
		"a token without namespaces":    {"POST", "/api/v1/jobs", noneToken, httpapi.CreateRequest{YAMLContent: training("x", "")}, 403},
		"another team's job":            {"DELETE", "/api/v1/jobs/" + tm.bob + ".bob-sft", aliceToken, nil, 403},
		"another team's job, bare":      {"POST", "/api/v1/jobs/bob-sft/pause", aliceToken, nil, 404},
		"a name that exists":            {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("sft", "")}, 409},
		// A team's own directory still holds only what its tenancy allows (render refuses it).
		"a quota in its own directory": {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{
			YAMLContent: "kind: quota\nversion: v0.1\nmetadata: {name: more}\nusers:\n  " + tm.alice + ": {cpu: 1000, memory: 1Ti, gpu: 64}\n"}, 400},
		"a privileged pod": {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{FileName: "root.yaml",
			YAMLContent: "apiVersion: v1\nkind: Pod\nmetadata: {name: root}\nspec:\n  hostPID: true\n  containers:\n    - name: c\n      image: busybox\n      securityContext: {privileged: true}\n"}, 400},
		"a cluster-scoped object": {"POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{FileName: "crb.yaml",
			YAMLContent: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: mine}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: Group, name: system:authenticated, apiGroup: rbac.authorization.k8s.io}]\n"}, 400},
		"an unknown job": {"POST", "/api/v1/jobs/" + tm.alice + ".nope/pause", aliceToken, nil, 404},
	} {
		if code, body := d.call(c.method, c.path, c.token, c.body, nil); code != c.code || strings.Contains(body, "s3cret") {
			t.Errorf("%s: %d %s, want %d", name, code, body, c.code)
		}
	}
	var e httpapi.Error
	code, _ = d.call("POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{
		YAMLContent: "kind: training\nversion: v0.1\njob: {name: bad}\nenvironment: {image: x}\nresources:\n  gpu: four\n  gpu-typo: a100\n"}, &e)
	if code != 400 || len(e.Diagnostics) < 2 || !strings.Contains(e.Message, "yamlContent:6:") || !strings.Contains(e.Message, "yamlContent:7:") {
		t.Errorf("invalid file: %d %+v", code, e)
	}
	for _, diag := range e.Diagnostics {
		if diag.File != "yamlContent" || diag.Line == 0 || diag.Column == 0 {
			t.Errorf("diagnostic without file:line:col: %+v", diag)
		}
	}
	if g.head() != before {
		t.Fatalf("a refused write committed: %s", g.Run(g.Bare, "log", "--oneline", before+"..main"))
	}

	// Pause: the Job is suspended; DELETE: it is gone.
	if code, body := d.call("POST", "/api/v1/jobs/"+tm.alice+".sft/pause", aliceToken, nil, nil); code != 200 || !strings.Contains(body, `"status": "paused"`) {
		t.Fatalf("pause: %d %s", code, body)
	}
	if !strings.Contains(g.Run(g.Bare, "show", "main:teams/"+tm.alice+"/sft.yaml"), "suspend: true") {
		t.Error("the pause commit does not suspend the job")
	}
	d.waitJob(tm.alice, "sft", "suspended", suspended)
	if code, body := d.call("DELETE", "/api/v1/jobs/sft", aliceToken, nil, nil); code != 200 || !strings.Contains(body, `"status": "terminating"`) {
		t.Fatalf("delete: %d %s", code, body)
	}
	if files := g.Run(g.Bare, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "sft.yaml\n") && strings.Contains(files, tm.alice+"/sft.yaml") {
		t.Errorf("the file is still there:\n%s", files)
	}
	d.waitJob(tm.alice, "sft", "deleted", gone)

	// A push that meets a moved branch: the edit is made again on the new commit and lands.
	g.race.Store(true)
	code, got, body = d.create(aliceToken, training("moved", ""))
	if code != http.StatusCreated || g.race.Load() {
		t.Fatalf("create while the branch moves: %d %s", code, body)
	}
	if log := g.Run(g.Bare, "log", "-2", "--format=%s", "main"); log != "gpuctl: create training moved (alice)\nsomeone else's commit" || got.Commit != g.head() {
		t.Fatalf("remote log:\n%s", log)
	}
	d.waitJob(tm.alice, "moved", "created", exists)

	// 20 writes at once: 20 commits.
	before = g.head()
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, _ = d.create(aliceToken, training(fmt.Sprintf("c-%02d", i), ""))
		}()
	}
	wg.Wait()
	log := g.Run(g.Bare, "log", "--format=%s", before+"..main") + "\n"
	for i := range 20 {
		if codes[i] != http.StatusCreated || !strings.Contains(log, fmt.Sprintf("gpuctl: create training c-%02d (alice)\n", i)) {
			t.Errorf("write %d: %d; remote log:\n%s", i, codes[i], log)
		}
	}
	if n := strings.Count(log, "\n"); n != 20 {
		t.Errorf("%d commits, want 20:\n%s", n, log)
	}
	d.waitJob(tm.alice, "c-19", "created", exists)

	// A remote that refuses the push: 503, nothing written, the clone at the remote's head.
	hook := filepath.Join(g.Bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'main is protected' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := g.head()
	code, body = d.call("POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("refused", "")}, nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "nothing was written") || strings.Contains(body, "s3cret") {
		t.Fatalf("refused push: %d %s", code, body)
	}
	if g.head() != head {
		t.Fatal("the remote moved")
	}
	os.Remove(hook)
	waitFor(t, "the sync of the remote's head", func() bool {
		st, _, err := d.store.Read(context.Background())
		return err == nil && st.AppliedRevision == head
	})
	if at := git(t, workDir, "rev-parse", "HEAD"); at != head {
		t.Errorf("the clone is at %s, the remote at %s", at, head)
	}
	// The checked-out tree (--work-dir/tree) holds the files of the head, and nothing else.
	var files []string
	tree := filepath.Join(workDir, "tree")
	filepath.WalkDir(tree, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(tree, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	want := strings.Fields(g.Run(g.Bare, "ls-tree", "-r", "--name-only", head))
	if slices.Sort(files); !slices.Equal(files, slices.Sorted(slices.Values(want))) {
		t.Errorf("the checked-out tree holds %q, want the files of the head %q", files, want)
	}
	if _, err := os.Stat(filepath.Join(tree, "teams", tm.alice, "refused.yaml")); !os.IsNotExist(err) {
		t.Errorf("the refused file is in the clone: %v", err)
	}
	st, _, _ := d.store.Read(context.Background())
	if b, _ := json.Marshal(st); strings.Contains(string(b), "s3cret") {
		t.Errorf("the status shows the credentials: %s", b)
	}
}

// TestAPIWritesOfADirectorySource: a directory source is written in place, and applied.
func TestAPIWritesOfADirectorySource(t *testing.T) {
	tm := newTeam("wd")
	repo := t.TempDir()
	for p, c := range map[string]string{"quotas/quota.yaml": tm.quota(), "teams/" + tm.bob + "/bob-sft.yaml": training("bob-sft", "")} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := startWriteDaemon(t, tm, "--source", "dir:"+repo)
	var batch httpapi.BatchResponse
	code, body := d.call("POST", "/api/v1/jobs/batch", aliceToken, httpapi.BatchCreateRequest{YAMLContents: []string{training("a", ""), training("b", "")}}, &batch)
	if code != http.StatusCreated || len(batch.Success) != 2 || batch.Success[1].Path != "teams/"+tm.alice+"/b.yaml" || batch.Success[0].Commit != "" {
		t.Fatalf("batch: %d %s", code, body)
	}
	if data, err := os.ReadFile(filepath.Join(repo, "teams", tm.alice, "a.yaml")); err != nil || string(data) != training("a", "") {
		t.Fatalf("the file as written: %q %v", data, err)
	}
	d.waitJob(tm.alice, "b", "created", exists)
	if code, body := d.call("POST", "/api/v1/jobs/"+tm.alice+".a/pause", aliceToken, nil, nil); code != 200 {
		t.Fatalf("pause: %d %s", code, body)
	}
	d.waitJob(tm.alice, "a", "suspended", suspended)

}

// TestAPIWritesToBranches: with --git-push-branch each write is a new branch, proposed for
// review (the followed branch and the cluster stay as they are); without --git-push a Git
// source takes no write (405, saying how to enable it).
func TestAPIWritesToBranches(t *testing.T) {
	tm := newTeam("wr")
	g := newGitRemote(t, tm)
	head := g.head()
	d := startWriteDaemon(t, tm, "--source", "git:"+g.URL, "--git-push", "--git-push-branch", "gpuctl/", "--git-poll-interval", "0")
	code, got, body := d.create(aliceToken, training("sft", ""))
	if code != http.StatusCreated || got.Status != "proposed" || !strings.HasPrefix(got.Branch, "gpuctl/create-sft-") || got.PullRequest != "" {
		t.Fatalf("create: %d %s", code, body)
	}
	if at := g.Run(g.Bare, "rev-parse", got.Branch); at != got.Commit || g.head() != head {
		t.Fatalf("branch %s at %s (commit %s), main at %s (was %s)", got.Branch, at, got.Commit, g.head(), head)
	}
	if _, err := d.kube.BatchV1().Jobs(tm.alice).Get(context.Background(), "sft", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a proposed job was created: %v", err)
	}

	tn := newTeam("wn")
	off := startWriteDaemon(t, tn, "--source", "git:"+newGitRemote(t, tn).URL, "--git-poll-interval", "0")
	code, body = off.call("POST", "/api/v1/jobs", opsToken, httpapi.CreateRequest{YAMLContent: training("x", tn.alice)}, nil)
	if code != http.StatusMethodNotAllowed || !strings.Contains(body, "--git-push") {
		t.Fatalf("a Git source without --git-push: %d %s", code, body)
	}
}

// git runs the git CLI in dir.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for start := time.Now(); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestWriteFlags: the write flags that do not go together are refused at start.
func TestWriteFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--source=dir:. --git-push":                                                                        "--git-push is for a git source",
		"--source=git:https://example.com/x.git --git-push-branch=p":                                       "--git-push-branch needs --git-push",
		"--source=git:https://example.com/x.git --ref=refs/tags/v1 --git-push":                             "a commit needs a branch to push to",
		"--source=git:https://example.com/x.git --ref=0123456789012345678901234567890123456789 --git-push": "a commit needs a branch",
	} {
		if _, err := openSource(t, args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// TestAPIWritesRefuseDotPaths: a create into a dot directory or any spelling of .git is 400,
// naming the path and why, and nothing is committed; a file whose name Git takes but kyaml's
// in-memory filesystem refuses (teams/bob/notes (old).md) stops no write; a commit pushed with
// plumbing that holds teams/alice/.GIT/x.yaml is FetchFailed naming the commit and the path, a
// write on it is 409, and the next commit that removes the path is applied.
func TestAPIWritesRefuseDotPaths(t *testing.T) {
	tm := newTeam("wp")
	g := newGitRemote(t, tm)
	g.Commit("bob's notes", map[string]string{"teams/" + tm.bob + "/notes (old).md": "old notes\n"})
	d := startWriteDaemon(t, tm, "--source", "git:"+g.URL, "--ref", "main", "--git-push", "--git-poll-interval", "0")
	before := g.head()
	dir := "teams/" + tm.alice + "/"
	for p, want := range map[string]string{
		dir + ".GIT":       `".GIT" is .git to Git`,
		dir + ".git":       `".git" is .git to Git`,
		dir + ".x":         `".x" starts with a dot`,
		dir + "GIT~1":      `"GIT~1" is .git to Git`,
		dir + ".git.":      `".git." is .git to Git`,
		dir + ".g\u200cit": `is .git to Git`,
		dir + "a/../.GIT":  `".." segment`,
		dir + "sub//x":     "empty segment",
	} {
		for _, token := range []string{aliceToken, opsToken} {
			var e httpapi.Error
			code, body := d.call("POST", "/api/v1/jobs", token, httpapi.CreateRequest{YAMLContent: training("dot", ""), Path: p}, &e)
			if code != http.StatusBadRequest || !strings.HasPrefix(e.Message, fmt.Sprintf("path: path %q: ", p)) || !strings.Contains(e.Message, want) {
				t.Errorf("path %q: %d %s, want 400 with %q", p, code, body, want)
			}
		}
	}
	code, body := d.call("POST", "/api/v1/jobs/batch", aliceToken, httpapi.BatchCreateRequest{YAMLContents: []string{training("dot", "")}, Path: dir + ".x"}, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "starts with a dot") {
		t.Errorf("batch into a dot directory: %d %s", code, body)
	}
	if code, body := d.call("POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("dot", ""), FileName: ".hidden.yaml"}, nil); code != http.StatusBadRequest {
		t.Errorf("a dot file name: %d %s", code, body)
	}
	if g.head() != before {
		t.Fatalf("a refused write committed: %s", g.Run(g.Bare, "log", "--oneline", before+"..main"))
	}

	// Bob's "notes (old).md" stops no write of alice's.
	code, got, body := d.create(aliceToken, training("sft", ""))
	if code != http.StatusCreated || got.Path != dir+"sft.yaml" {
		t.Fatalf("create beside notes (old).md: %d %s", code, body)
	}
	d.waitJob(tm.alice, "sft", "created", exists)

	// A commit that Git cannot check out: reported, writes refused, the next good one applied.
	g.Git("fetch", "-q", "origin", "main")
	g.Git("reset", "-q", "--hard", "FETCH_HEAD")
	bad := g.CommitTree("a .GIT directory", map[string]string{dir + ".GIT/x.yaml": "kind: ConfigMap\n"})
	if code, body := d.call("POST", "/api/v1/sync", opsToken, nil, nil); code >= 300 {
		t.Fatalf("sync: %d %s", code, body)
	}
	var st daemon.Status
	waitFor(t, "FetchFailed naming the commit and the path", func() bool {
		st, _, _ = d.store.Read(context.Background())
		return st.Result == daemon.ResultFetchFailed && strings.Contains(st.Message, bad[:12]) && strings.Contains(st.Message, dir+".GIT")
	})
	code, body = d.call("POST", "/api/v1/jobs", aliceToken, httpapi.CreateRequest{YAMLContent: training("later", "")}, nil)
	if code != http.StatusConflict || !strings.Contains(body, "cannot be checked out") || g.head() != bad {
		t.Errorf("a write on the bad commit: %d %s", code, body)
	}
	fixed := g.Commit("remove the .GIT directory", map[string]string{"teams/" + tm.bob + "/bob-2.yaml": training("bob-2", "")})
	if code, body := d.call("POST", "/api/v1/sync", opsToken, nil, nil); code >= 300 {
		t.Fatalf("sync: %d %s", code, body)
	}
	waitFor(t, "the next good commit applied", func() bool {
		st, _, _ = d.store.Read(context.Background())
		return st.AppliedRevision == fixed
	})
	d.waitJob(tm.bob, "bob-2", "created", exists)
}
