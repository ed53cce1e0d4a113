package fleet

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	reconcilerapp "github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app"
	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"k8s.io/client-go/kubernetes"
)

// The rig of the package: local clusters started at once, a gpuctl-reconciler per cluster in
// this process following one Git repository (gittest), the CLI run in this process with a
// config file of its own.

// waitTimeout bounds each wait of a test: a start, a first sync, a daemon's stop.
const waitTimeout = 2 * time.Minute

// startClusters starts a cluster of nodes for each name, all at once, and returns them by
// name; each is stopped when the test ends. Each lives in a directory of the test's own, which
// Stop keeps: a stopped cluster's kubeconfig is still there, so that a client finds its server
// gone rather than its kubeconfig.
func startClusters(t *testing.T, nodes []testcluster.NodeSpec, names ...string) map[string]*testcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	opts := map[string]testcluster.Options{}
	for _, name := range names {
		opts[name] = testcluster.Options{Dir: t.TempDir(), Nodes: nodes}
	}
	begin := time.Now()
	out, err := testcluster.StartSeveral(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range out {
		t.Cleanup(func() {
			if err := c.Stop(); err != nil {
				t.Logf("stop cluster %s: %v", name, err)
			}
		})
	}
	t.Logf("%d clusters of %d nodes up in %s", len(names), len(nodes), time.Since(begin).Round(100*time.Millisecond))
	return out
}

// reconciler is a gpuctl-reconciler running in this process against one cluster.
type reconciler struct {
	store *daemon.Store
	stop  func()
}

// startReconciler runs gpuctl-reconciler --cluster name over the Git repository at url (its
// HEAD, no polling) against the cluster c, with its records in gpuctl-system (where the CLI
// reads them), and waits for its first sync, which must succeed. It stops when the test ends, or earlier with stop.
func startReconciler(t *testing.T, c *testcluster.Cluster, name, url string) *reconciler {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := reconcilerapp.NewCommand()
	cmd.SetArgs([]string{"--source=git:" + url, "--git-poll-interval", "0", "--work-dir", t.TempDir(), "--cluster", name,
		"--kubeconfig", c.Kubeconfig, "--listen", "127.0.0.1:0", "--interval", "1h", "--memory-limit", "0", "--log-level", "error"})
	var runErr error
	exited := make(chan struct{})
	go func() { runErr = cmd.ExecuteContext(ctx); close(exited) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-exited:
				if runErr != nil {
					t.Errorf("gpuctl-reconciler --cluster %s: %v", name, runErr)
				}
			case <-time.After(waitTimeout):
				t.Errorf("gpuctl-reconciler --cluster %s did not stop", name)
			}
		})
	}
	t.Cleanup(stop)
	r := &reconciler{store: daemon.NewStore(kubernetes.NewForConfigOrDie(c.RESTConfig()), keys.SystemNamespace), stop: stop}
	var st daemon.Status
	testcluster.Poll(t, "the first sync of cluster "+name, waitTimeout, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			t.Fatalf("gpuctl-reconciler --cluster %s exited: %v", name, runErr)
		default:
		}
		var err error
		st, _, err = r.store.Read(ctx)
		return err == nil && st.Result != daemon.ResultPending && st.Result != "", err
	})
	if st.Result != daemon.ResultSucceeded {
		t.Fatalf("the first sync of cluster %s: %s: %s %v", name, st.Result, st.Message, st.Errors)
	}
	return r
}

// useConfig makes content the CLI's config file ($XDG_CONFIG_HOME/gpuctl/config) for the
// rest of the test, with no kubeconfig, server or token of the environment's.
func useConfig(t *testing.T, content string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "none"))
	t.Setenv("GPUCTL_SERVER", "")
	t.Setenv("GPUCTL_TOKEN", "")
	if err := os.MkdirAll(filepath.Join(home, "gpuctl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "gpuctl", "config"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// gpuctl runs the CLI in this process and returns its output, its errors and its exit code.
func gpuctl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := app.Run(t.Context(), app.Streams{Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}
