package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	reconcilerapp "github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"k8s.io/client-go/kubernetes"
)

// TestConcurrentGpuctlSync (issue 32, finding 2): 10, then 50 `gpuctl sync` at once, as CI pipelines
// that merge in parallel run them, all exit 0 with the result of a sync that started after
// their request. Before, the callers overwrote one annotation and the daemon echoed only the
// newest request's id: 1 exited 0 and 9 waited their whole --timeout and exited 2 with "no
// answer from gpuctl-reconciler … is it running?".
func TestConcurrentGpuctlSync(t *testing.T) {
	const ns = "sys-syncburst"
	repo := t.TempDir()
	web := "kind: compute\nversion: v0.1\njob: {name: sync-burst, namespace: default}\nenvironment: {image: nginx}\n"
	if err := os.WriteFile(filepath.Join(repo, "web.yaml"), []byte(web), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cmd := reconcilerapp.NewCommand()
	cmd.SetArgs([]string{"--source=dir:" + repo, "--kubeconfig", testcluster.Current().Kubeconfig, "--namespace", ns,
		"--listen", "127.0.0.1:0", "--interval", "1h", "--memory-limit", "0", "--log-level", "warn"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
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
	store := daemon.NewStore(kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig()), ns)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if st, _, err := store.Read(ctx); err == nil && st.Result == daemon.ResultSucceeded {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("gpuctl-reconciler exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no first sync in a minute")
		}
	}

	for _, n := range []int{10, 50} {
		t.Run(fmt.Sprintf("%d at once", n), func(t *testing.T) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			syncs := map[time.Time]int{} // the answers' syncs, by start
			for i := range n {
				wg.Go(func() {
					asked := time.Now()
					out, errOut, code := gpuctl(t, "sync", "-n", ns, "-o", "json", "--timeout", "45s")
					var st daemon.Status
					if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
						t.Errorf("gpuctl sync %d: exit %d after %s\n%s\n%s", i, code, time.Since(asked).Round(time.Millisecond), out, errOut)
						return
					}
					// The daemon runs on this machine: its clock is the test's.
					if st.Result != daemon.ResultSucceeded || st.LastAttempt.Before(asked) {
						t.Errorf("gpuctl sync %d, asked at %s: the result of a sync that started at %s: %s %s", i,
							asked.Format(time.RFC3339Nano), st.LastAttempt.Format(time.RFC3339Nano), st.Result, st.Message)
					}
					mu.Lock()
					syncs[st.LastAttempt]++
					mu.Unlock()
				})
			}
			wg.Wait()
			t.Logf("%d gpuctl sync at once were answered by %d syncs: %v", n, len(syncs), syncs)
		})
	}
}
