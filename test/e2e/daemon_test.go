package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestReconcilerBinary runs the real gpuctl-reconciler against a directory: it syncs, records
// its status, serves health, metrics and the API (401 without a token), and `gpuctl sync` gets
// its answer; a kubectl-edit then shows in `gpuctl drift`, /api/v1/drift, /metrics and the web
// page.
func TestReconcilerBinary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildReconciler(t)
	repo := t.TempDir()
	job := "kind: compute\nversion: v0.1\njob: {name: bin-web, namespace: default}\nenvironment: {image: nginx}\n"
	if err := os.WriteFile(filepath.Join(repo, "web.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("s3cret,ops,admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.CommandContext(ctx, bin, "--source=dir:"+repo, "--kubeconfig", testcluster.Current().Kubeconfig,
		"--namespace", "bin-system", "--listen", addr, "--tokens-file", tokens, "--log-format", "json")
	logf, _ := os.Create(filepath.Join(t.TempDir(), "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()

	store := daemon.NewStore(kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig()), "bin-system")
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, _, _ := store.Read(ctx)
		if st.Result == daemon.ResultSucceeded {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("no successful sync; status %+v\nlog:\n%s", st, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/healthz", "", 200, "ok"},
		{"/metrics", "", 200, `gpuctl_reconcile_total{result="Succeeded"}`},
		{"/api/v1/status", "", 401, `"code": 401`},
		{"/api/v1/status", "wrong", 401, `"code": 401`},
		{"/api/v1/status", "s3cret", 200, `"result": "Succeeded"`},
		{"/api/v1/jobs?pageSize=100", "s3cret", 200, `bin-web`},
	} {
		code, body := get(c.path, c.token)
		if code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("GET %s (token %q): %d %.300s; want %d containing %s", c.path, c.token, code, body, c.code, c.body)
		}
	}
	out, errOut, code := gpuctl(t, "sync", "-n", "bin-system", "--timeout", "30s")
	if code != 0 || !strings.Contains(out, "Succeeded") {
		t.Fatalf("gpuctl sync: exit %d\n%s\n%s", code, out, errOut)
	}

	// Drift: a kubectl-edit shows in gpuctl drift, /api/v1/drift, /metrics and the web page.
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	if _, err := kube.AppsV1().Deployments("default").Patch(ctx, "bin-web", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, errOut, code = gpuctl(t, "drift", "-n", "bin-system", "--exit-code")
		if code == 1 && strings.Contains(out, "kubectl-edit") && strings.Contains(out, "spec.replicas: 2 (Git: 1)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gpuctl drift never reported the edit: exit %d\n%s\n%s", code, out, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/api/v1/drift", "s3cret", 200, `"manager": "kubectl-edit"`},
		{"/metrics", "", 200, `gpuctl_drift_objects{category="modified",kind="Deployment"} 1`},
		{"/", "", 401, ""},
	} {
		if code, body := get(c.path, c.token); code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("GET %s (token %q): %d %.300s; want %d containing %s", c.path, c.token, code, body, c.code, c.body)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	req.SetBasicAuth("ops", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "kubectl-edit") || !strings.Contains(string(page), "bin-web") {
		t.Errorf("GET / with basic auth: %d %.500s", resp.StatusCode, page)
	}
}

// buildReconciler builds cmd/gpuctl-reconciler into the test's temporary directory.
func buildReconciler(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpuctl-reconciler")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../../cmd/gpuctl-reconciler").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
