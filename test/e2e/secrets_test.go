package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/gittest"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// secretManifest is a plain Secret with a token in stringData and a key in data (base64), as
// an admin commits it.
func secretManifest(ns, name, token, key string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: %s
type: Opaque
stringData:
  HF_TOKEN: %s
data:
  WANDB_API_KEY: %s
`, name, ns, token, base64.StdEncoding.EncodeToString([]byte(key)))
}

// shown collects every output of a test, to be searched for secret values at its end.
type shown struct {
	outputs []string
	labels  []string
}

func (s *shown) add(label, out string) {
	s.labels = append(s.labels, label)
	s.outputs = append(s.outputs, out)
}

// leaks returns, for each output, the forms of the values it holds: the value, its base64, the
// base64 of that, and the first 12 characters of each (a shortened value is a leak too).
func (s *shown) leaks(values []string) []string {
	var out []string
	for i, o := range s.outputs {
		for _, v := range values {
			b64 := base64.StdEncoding.EncodeToString([]byte(v))
			for _, form := range []string{v, b64, base64.StdEncoding.EncodeToString([]byte(b64)), v[:12], b64[:12]} {
				if strings.Contains(o, form) {
					out = append(out, fmt.Sprintf("%s holds %q (of %q):\n%s", s.labels[i], form, v, o))
				}
			}
		}
	}
	return out
}

// TestSecretValuesNeverPrinted: with a Secret in the repository (stringData and data), no
// output shows a value, its base64 or the base64 of that — gpuctl diff and sync --local (text
// and JSON) before the Secret exists, after a change of its values in Git and with a live
// last-applied-configuration that holds them; the review of two revisions (text, Markdown,
// JSON); and the daemon's logs, status, plan, drift report (a kubectl-edit of the Secret's
// data: named, without values), API and page, through the daemon and gpuctl status and
// drift. The outputs do name the keys that change.
func TestSecretValuesNeverPrinted(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	ns := logsNamespace(t, kube, "secrets-e2e")
	values := []string{"hf_tokenOfGitBefore0001", "wandb-keyOfGitBefore0002", "hf_tokenOfGitAfter00003",
		"wandb-keyOfGitAfter00004", "hf_tokenOfKubectlEdit05", "hf_tokenOfLastApplied06"}
	var s shown
	cli := func(label string, args ...string) (string, int) {
		t.Helper()
		out, errOut, code := gpuctl(t, args...)
		s.add(label+" (stdout)", out)
		s.add(label+" (stderr)", errOut)
		return out, code
	}
	defer func() {
		for _, l := range s.leaks(values) {
			t.Error(l)
		}
	}()

	// gpuctl diff and sync --local: the Secret created, then changed in Git.
	repo := t.TempDir()
	file := filepath.Join(repo, "admin", "secret.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(file, secretManifest(ns, "hf-creds", values[0], values[1]))
	// other tests share the inventory: never prune theirs
	if out, code := cli("diff of a new Secret", "diff", repo, "--prune=false"); code != app.ExitFailed || !strings.Contains(out, "create Secret "+ns+"/hf-creds") {
		t.Fatalf("diff: exit %d\n%s", code, out)
	}
	cli("diff -o json of a new Secret", "diff", repo, "--prune=false", "-o", "json")
	cli("sync --dry-run", "sync", "--local", repo, "--prune=false", "--dry-run")
	cli("sync --dry-run -o json", "sync", "--local", repo, "--prune=false", "--dry-run", "-o", "json")
	if out, code := cli("sync", "sync", "--local", repo, "--prune=false"); code != 0 {
		t.Fatalf("sync: exit %d\n%s", code, out)
	}
	// kubectl apply would leave the Secret's values in an annotation.
	lastApplied := fmt.Sprintf(`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":%q}}}`,
		`{"apiVersion":"v1","kind":"Secret","stringData":{"HF_TOKEN":"`+values[5]+`"}}`)
	if _, err := kube.CoreV1().Secrets(ns).Patch(t.Context(), "hf-creds", types.MergePatchType, []byte(lastApplied),
		metav1.PatchOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	write(file, secretManifest(ns, "hf-creds", values[2], values[3]))
	out, code := cli("diff of a changed Secret", "diff", repo, "--prune=false")
	if code != app.ExitFailed || !strings.Contains(out, "-  HF_TOKEN: '*** (before)'") || !strings.Contains(out, "+  HF_TOKEN: '*** (after)'") ||
		!strings.Contains(out, "+  WANDB_API_KEY: '*** (after)'") {
		t.Errorf("the diff does not say which values change: exit %d\n%s", code, out)
	}
	if out, _ = cli("diff -o json of a changed Secret", "diff", repo, "--prune=false", "-o", "json"); !strings.Contains(out, `"path": "data.HF_TOKEN"`) ||
		!strings.Contains(out, `"path": "data.WANDB_API_KEY"`) || !strings.Contains(out, `"new": "*** (after)"`) {
		t.Errorf("the JSON diff does not name the changed keys:\n%s", out)
	}
	cli("sync -o json of a changed Secret", "sync", "--local", repo, "--prune=false", "-o", "json")
	if sec, err := kube.CoreV1().Secrets(ns).Get(t.Context(), "hf-creds", metav1.GetOptions{}); err != nil || string(sec.Data["HF_TOKEN"]) != values[2] {
		t.Fatalf("the sync did not apply the new token: %v", err)
	}

	// The review of two revisions: a Secret added, then changed.
	r := gittest.New(t, nil)
	r.Commit("base", map[string]string{"admin/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: " + ns + "}\ndata: {a: b}\n"})
	r.Git("tag", "base")
	r.Commit("secret", map[string]string{"admin/secret.yaml": secretManifest(ns, "hf-creds", values[0], values[1])})
	r.Git("tag", "secret")
	r.Write(map[string]string{"admin/secret.yaml": secretManifest(ns, "hf-creds", values[2], values[3])})
	for _, o := range []string{"text", "markdown", "json"} {
		cli("review of an added Secret -o "+o, "diff", r.Work, "--base", "base", "--head", "secret", "-o", o)
		out, _ := cli("review of a changed Secret -o "+o, "diff", r.Work, "--base", "secret", "-o", o)
		if !strings.Contains(out, "stringData.HF_TOKEN") || !strings.Contains(out, "data.WANDB_API_KEY") {
			t.Errorf("the review (-o %s) does not name the changed keys:\n%s", o, out)
		}
	}

	secretsDaemon(t, kube, ns, values, &s, cli)
}

// secretsDaemon runs gpuctl-reconciler on a directory with a Secret, changes its values in
// Git, then edits its data with another field manager, and collects the daemon's logs, status,
// plan, drift report and page, from the API and from the CLI.
func secretsDaemon(t *testing.T, kube kubernetes.Interface, ns string, values []string, s *shown, cli func(string, ...string) (string, int)) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	system := "secrets-e2e-system"
	repo := t.TempDir()
	file := filepath.Join(repo, "secret.yaml")
	if err := os.WriteFile(file, []byte(secretManifest(ns, "hf-daemon", values[0], values[1])), 0o644); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok,ops,admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.CommandContext(ctx, buildReconciler(t), "--source=dir:"+repo, "--kubeconfig", testcluster.Current().Kubeconfig,
		"--namespace", system, "--listen", addr, "--tokens-file", tokens, "--log-format", "json")
	logf, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			log, _ := os.ReadFile(logf.Name())
			s.add("the daemon's log", string(log))
		}
	}
	defer stop()
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), system, metav1.DeleteOptions{}) })

	store := daemon.NewStore(kube, system)
	synced := func(what string, done func(*corev1.Secret) bool) {
		t.Helper()
		waitUntilFor(t, what, 60*time.Second, func(ctx context.Context) bool {
			st, _, _ := store.Read(ctx)
			sec, err := kube.CoreV1().Secrets(ns).Get(ctx, "hf-daemon", metav1.GetOptions{})
			return st.Result == daemon.ResultSucceeded && err == nil && done(sec)
		})
	}
	synced("the daemon's first sync", func(sec *corev1.Secret) bool { return string(sec.Data["HF_TOKEN"]) == values[0] })
	if err := os.WriteFile(file, []byte(secretManifest(ns, "hf-daemon", values[2], values[3])), 0o644); err != nil {
		t.Fatal(err)
	}
	synced("the daemon's sync of the new values", func(sec *corev1.Secret) bool { return string(sec.Data["HF_TOKEN"]) == values[2] })

	// A kubectl-edit of the token: drift, named without values.
	edit := fmt.Sprintf(`{"data":{"HF_TOKEN":%q}}`, base64.StdEncoding.EncodeToString([]byte(values[4])))
	if _, err := kube.CoreV1().Secrets(ns).Patch(ctx, "hf-daemon", types.MergePatchType, []byte(edit),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("the last drift report:\n%s", last)
		}
	}()
	waitUntil(t, "gpuctl drift to report the edit", func(context.Context) bool {
		out, errOut, code := gpuctl(t, "drift", "-n", system, "--exit-code")
		last = out + errOut
		return code == 1 && strings.Contains(out, "data.HF_TOKEN") && strings.Contains(out, "kubectl-edit")
	})
	for _, o := range []string{"text", "json", "yaml", "markdown"} {
		cli("gpuctl drift -o "+o, "drift", "-n", system, "--since", "0", "-o", o)
	}
	for _, o := range []string{"text", "json", "yaml"} {
		cli("gpuctl status -o "+o, "status", "-n", system, "-o", o)
	}
	get := func(path string, basic bool) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if basic {
			req.SetBasicAuth("ops", "tok")
		} else {
			req.Header.Set("Authorization", "Bearer tok")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		s.add("GET "+path, string(b))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if body := get("/api/v1/drift?since=0", false); !strings.Contains(body, `"path": "data.HF_TOKEN"`) || !strings.Contains(body, `"manager": "kubectl-edit"`) {
		t.Errorf("the drift report does not name the edited key and its manager:\n%s", body)
	}
	if body := get("/api/v1/plan", false); !strings.Contains(body, `"path": "data.HF_TOKEN"`) {
		t.Errorf("the plan does not name the key that the sync takes back:\n%s", body)
	}
	get("/api/v1/status", false)
	get("/", true)
	stop()
}
