package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/gittest"
	"github.com/gpuctl/gpuctl/test/testcluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestGitSourceExampleRuns runs the real gpuctl-reconciler with the arguments, mounts and
// environment of deploy/examples/git-source's container, as the pod would: each volume mount
// is a directory of its own (the Secrets' files written into theirs), the source is a Git
// remote of the test, and nothing else is writable — $TMPDIR does not exist, as /tmp would not
// on a read-only root without its emptyDir. It clones into --work-dir on the work emptyDir,
// syncs, and a GitHub push webhook signed with the mounted secret brings the next commit. With
// --git-push, the API's writes are commits on the remote that the binary then applies.
func TestGitSourceExampleRuns(t *testing.T) {
	ctx := t.Context()
	d := find(t, buildDeploy(t, "examples/git-source"), "Deployment", "gpuctl-reconciler")
	c := containers(t, d)[0]
	remote := gittest.New(t, nil)
	first := remote.Commit("a web service", map[string]string{"web.yaml": "kind: compute\nversion: v0.1\njob: {name: example-web, namespace: default}\nenvironment: {image: nginx}\n"})

	root := t.TempDir() // the container's mounts, each at root/<mountPath>
	mounted := func(p string) string {
		for _, m := range c.VolumeMounts {
			if rest, ok := strings.CutPrefix(p, m.MountPath); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
				return filepath.Join(root, filepath.FromSlash(p))
			}
		}
		t.Fatalf("%s is on no volume of the container (%v): on a read-only root nothing can write or provide it", p, c.VolumeMounts)
		return ""
	}
	for _, m := range c.VolumeMounts {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(m.MountPath)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const hookSecret = "hook-s3cret"
	secrets := map[string]string{ // the Secrets' keys, as deploy/README.md creates them
		"/etc/gpuctl/git/token":          "git-token",
		"/etc/gpuctl/git/webhook-secret": hookSecret,
		"/etc/gpuctl/api/tokens":         "api-s3cret,ops,admin\n",
	}
	for p, content := range secrets {
		if err := os.WriteFile(mounted(p), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr, ns := freeAddr(t), "example-system"
	var args []string
	for _, arg := range c.Args {
		flag, value, ok := strings.Cut(arg, "=")
		switch {
		case !ok:
			args = append(args, arg)
			continue
		case flag == "--listen":
			value = addr
		case flag == "--source":
			value = "git:" + remote.URL
		case strings.HasPrefix(value, "/"):
			value = mounted(value)
		}
		args = append(args, flag+"="+value)
	}
	// --git-push: the API's writes (commented out in the example, one line to enable).
	args = append(args, "--kubeconfig="+testcluster.Current().Kubeconfig, "--namespace="+ns, "--git-push")
	cmd := exec.CommandContext(ctx, buildReconciler(t), args...)
	cmd.Env = append(os.Environ(), "POD_NAME=gpuctl-reconciler-0", "HOME="+t.TempDir(),
		"TMPDIR="+filepath.Join(root, "no-tmp")) // os.MkdirTemp fails: the clone must go to --work-dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Signal(os.Interrupt); <-exited }()

	store := daemon.NewStore(kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig()), ns)
	waitApplied := func(rev string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			st, _, _ := store.Read(ctx)
			if st.Result == daemon.ResultSucceeded && st.AppliedRevision == rev {
				return
			}
			select {
			case <-exited:
				t.Fatalf("gpuctl-reconciler exited: %v\nlog:\n%s", cmd.ProcessState, log.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("revision %s never applied; status %+v\nlog:\n%s", rev, st, log.String())
			}
		}
	}
	waitApplied(first)
	if _, err := os.Stat(filepath.Join(mounted("/var/lib/gpuctl/git"), ".git")); err != nil || !strings.Contains(strings.Join(c.Args, " "), "--work-dir=/var/lib/gpuctl/git") {
		t.Errorf("the clone is not in --work-dir /var/lib/gpuctl/git (args %v): %v", c.Args, err)
	}

	// A push: the webhook route the example sets brings it now, not at the next poll (60 s).
	second := remote.Commit("a description", map[string]string{"web.yaml": "kind: compute\nversion: v0.1\njob: {name: example-web, namespace: default, description: the example}\nenvironment: {image: nginx}\n"})
	code, err := gittest.PostGitHubPush(ctx, "http://"+addr+"/hooks/github", hookSecret, "refs/heads/main")
	if err != nil || code/100 != 2 {
		t.Fatalf("POST /hooks/github: %d %v", code, err)
	}
	waitApplied(second)

	// The API's writes against this binary (issue #17): a POST is a commit on the remote, made
	// as the token's name, and its objects appear; a DELETE is a commit that removes the file,
	// and they go.
	api := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer api-s3cret")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out := map[string]any{}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %v", method, path, resp.StatusCode, err)
		}
		return resp.StatusCode, out
	}
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	code, out := api("POST", "/api/v1/jobs", `{"yamlContent": "kind: compute\nversion: v0.1\njob: {name: api-web, namespace: default}\nenvironment: {image: nginx}\n", "path": "."}`)
	created, _ := out["commit"].(string)
	if code != http.StatusCreated || created == "" || out["jobId"] != "default.api-web" || out["path"] != "api-web.yaml" {
		t.Fatalf("POST /api/v1/jobs: %d %v\nlog:\n%s", code, out, log.String())
	}
	remote.Git("pull", "-q", "origin", "main")
	if head := remote.Git("log", "-1", "--format=%H %an %s"); head != created+" ops gpuctl: create compute api-web (ops)" {
		t.Errorf("the remote's head after the POST: %q, want the commit %s by ops", head, created)
	}
	waitApplied(created)
	if _, err := kube.AppsV1().Deployments("default").Get(ctx, "api-web", metav1.GetOptions{}); err != nil {
		t.Fatalf("the POSTed job's Deployment: %v", err)
	}
	code, out = api("DELETE", "/api/v1/jobs/default.api-web", "")
	deleted, _ := out["commit"].(string)
	if code != http.StatusOK || deleted == "" {
		t.Fatalf("DELETE /api/v1/jobs/default.api-web: %d %v", code, out)
	}
	remote.Git("pull", "-q", "origin", "main")
	if _, err := os.Stat(filepath.Join(remote.Work, "api-web.yaml")); !os.IsNotExist(err) {
		t.Errorf("api-web.yaml is still in the remote after the DELETE (%v)", err)
	}
	waitApplied(deleted)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		d, err := kube.AppsV1().Deployments("default").Get(ctx, "api-web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && d.DeletionTimestamp != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted job's Deployment is still there: %v", err)
		}
	}

	// gpuctl create --push --wait from a clone: the CLI commits and pushes, the forge's webhook
	// brings the commit to this binary, and the CLI returns once the binary has applied it,
	// with the job's row.
	for k, v := range map[string]string{"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
		"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
		"GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v) // for the git that gpuctl create runs
	}
	remote.Git("fetch", "-q", "origin")
	remote.Git("branch", "-q", "--set-upstream-to=origin/main")
	file := filepath.Join(t.TempDir(), "cli-web.yaml")
	if err := os.WriteFile(file, []byte("kind: compute\nversion: v0.1\njob: {name: cli-web, namespace: default}\nenvironment: {image: nginx}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := remote.Run(remote.Root, "--git-dir="+remote.Bare, "rev-parse", "main")
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := gpuctl(t, "create", "-f", file, "--repo", remote.Work, "--path", ".", "--push", "--wait",
			"--reconciler-namespace", ns, "--timeout", "60s")
		done <- result{out, errOut, code}
	}()
	for deadline := time.Now().Add(30 * time.Second); remote.Run(remote.Root, "--git-dir="+remote.Bare, "rev-parse", "main") == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("gpuctl create --push pushed nothing in 30 s")
		}
	}
	if code, err := gittest.PostGitHubPush(ctx, "http://"+addr+"/hooks/github", hookSecret, "refs/heads/main"); err != nil || code/100 != 2 {
		t.Fatalf("POST /hooks/github: %d %v", code, err)
	}
	r := <-done
	if r.code != 0 || !strings.Contains(r.errOut, "applied ") || !strings.Contains(r.out, "cli-web") {
		t.Fatalf("gpuctl create --push --wait: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	if _, err := kube.AppsV1().Deployments("default").Get(ctx, "cli-web", metav1.GetOptions{}); err != nil {
		t.Fatalf("after gpuctl create --wait returned, the job's Deployment: %v", err)
	}
}
