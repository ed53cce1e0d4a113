package app

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newRepo returns a directory for a test's files and the function that writes one there.
func newRepo(t *testing.T) (dir string, write func(path, content string)) {
	dir = t.TempDir()
	return dir, func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAPIServerOutage (issue 32), on the real daemon: kube-apiserver killed. Within seconds
// GET /api/v1/status and the page say "unreachable since" and /readyz answers 503 with it,
// while /healthz stays 200 (a liveness probe never restarts the daemon for an outage). A job
// committed during the outage is applied within seconds of the API server's return, and the
// daemon is ready again.
func TestAPIServerOutage(t *testing.T) {
	tm := newTeam("outage")
	repo, write := newRepo(t)
	write("quotas/quota.yaml", tm.quota())
	write("teams/"+tm.alice+"/a.yaml", training("a", ""))
	d := startDaemon(t, tm, &Options{}, "--source", "dir:"+repo)
	c := testcluster.Current()
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	down := true
	t.Cleanup(func() {
		if down {
			if err := c.StartAPIServer(context.Background()); err != nil {
				t.Errorf("start the API server again: %v", err)
			}
		}
	})
	killed := time.Now()
	get := func(path, token string) (int, string) { return d.call(http.MethodGet, path, token, nil, nil) }
	for {
		code, body := get("/readyz", "")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "not ready: the API server is unreachable since") {
			t.Logf("/readyz: %s %s after the kill", strings.TrimSpace(body), time.Since(killed).Round(time.Millisecond))
			break
		}
		if time.Since(killed) > 15*time.Second {
			t.Fatalf("/readyz 15 s after the kill: %d %q; want 503, the API server unreachable", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get("/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz during the outage: %d %q; want 200 (liveness does not depend on the API server)", code, body)
	}
	var st daemon.Status
	if code, body := d.call(http.MethodGet, "/api/v1/status", opsToken, nil, &st); code != http.StatusOK || st.APIServer == nil ||
		st.APIServer.Since.Before(killed.Add(-time.Second)) || !strings.Contains(st.APIServer.Error, "connection refused") {
		t.Errorf("GET /api/v1/status during the outage: %d %s; want apiServer since the kill, connection refused", code, body)
	}
	if code, page := get("/", opsToken); code != http.StatusOK || !strings.Contains(page, "unreachable since") {
		t.Errorf("the page during the outage: %d, without \"unreachable since\"", code)
	}

	write("teams/"+tm.alice+"/b.yaml", training("b", "")) // committed during the outage
	time.Sleep(2 * time.Second)                           // its sync fails; the backoff begins
	if err := c.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	down = false
	back := time.Now()
	took := d.waitJob(tm.alice, "b", "created", func(exists, _ bool) bool { return exists })
	t.Logf("the job committed during the outage was applied %s after the API server was back", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("applied %s after the API server was back; want within 10 s", took.Round(time.Millisecond))
	}
	for {
		code, _ := get("/readyz", "")
		if code == http.StatusOK {
			break
		}
		if time.Since(back) > 10*time.Second {
			t.Fatalf("/readyz %d 10 s after the API server was back", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := d.kube.BatchV1().Jobs(tm.alice).Get(t.Context(), "a", metav1.GetOptions{}); err != nil {
		t.Errorf("the job of before the outage: %v", err)
	}
}
