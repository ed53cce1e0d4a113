package testcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/syncbuf"
)

// TestToolsScriptTakesTheLock: hack/cluster-tools.sh waits while another holds the lock that
// Binaries takes (os.TempDir()/gpuctl-cluster-tools.lock, here under a TMPDIR of its own), so
// make demo's background Kueue build and a test's build never write the same directory at
// once; it finishes once the lock is free; and with GPUCTL_TOOLS_LOCKED=1, as Binaries runs
// it while holding the lock, it does not wait for its own caller.
func TestToolsScriptTakesTheLock(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("lockFile locks on Linux only")
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1): the script does not lock without it")
	}
	if os.Getenv(EnvBinDir) != "" {
		t.Skip(EnvBinDir + " is set: the script's cache may not be built")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The binaries are built (TestMain started a cluster), so an unblocked run only checks them.
	dir, err := Binaries(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	run := func(env ...string) (*exec.Cmd, *syncbuf.Buffer, *syncbuf.Buffer, chan error) {
		cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(root, toolsScript))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), append([]string{"TMPDIR=" + tmp, envToolsLocked + "="}, env...)...)
		var stdout, stderr syncbuf.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, &stdout, &stderr, done
	}
	finished := func(what string, stdout, stderr *syncbuf.Buffer, done chan error) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v; stderr:\n%s", what, err, stderr)
			}
			if got := lastLine(stdout.String()); got != dir {
				t.Errorf("%s printed %q last, want %q", what, got, dir)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still runs after 30 s; stderr:\n%s", what, stderr)
		}
	}

	unlock, err := lockFile(filepath.Join(tmp, toolsLockName))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { unlock() }()

	_, stdout, stderr, done := run()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "waiting for another hack/cluster-tools.sh") {
		select {
		case err := <-done:
			t.Fatalf("the script ran to its end (%v) while the lock was held; stdout %q, stderr:\n%s", err, stdout, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the script said nothing of the held lock in 10 s; stderr:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the script ended (%v) while the lock was still held; stderr:\n%s", err, stderr)
	case <-time.After(time.Second):
	}

	// Binaries' way: it holds the lock and says so; the script must not wait for it.
	_, stdout2, stderr2, done2 := run(envToolsLocked + "=1")
	finished("the script with "+envToolsLocked+"=1 under the held lock", stdout2, stderr2, done2)

	unlock()
	unlock = func() {}
	finished("the waiting script, once the lock was free", stdout, stderr, done)
}
