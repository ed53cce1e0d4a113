// Package clitest runs the gpuctl CLI in the test's process, against the test cluster
// (testcluster.Current), as a user runs it: its output, its error output and its exit code.
//
//	out, errOut, code := clitest.Run(t, "get", "jobs", "-A")
//	clitest.SyncLocal(t, dir) // gpuctl sync --local dir, which must succeed
package clitest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// Run runs gpuctl with args and the test cluster's kubeconfig.
func Run(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return RunAs(t, testcluster.Current().Kubeconfig, args...)
}

// RunAs runs gpuctl with args and kubeconfig ("": none, as args say).
func RunAs(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if kubeconfig != "" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	var out, errOut bytes.Buffer
	code = app.Run(t.Context(), app.Streams{Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

// SyncLocal runs `gpuctl sync --local dir` (pruning without a bound) and fails the test unless
// it succeeds with no failed change.
func SyncLocal(t testing.TB, dir string) {
	t.Helper()
	out, errOut, code := Run(t, "sync", "--local", dir, "--max-prune=100%", "--color", "never")
	if code != 0 || strings.Contains(out, "failed") {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
}
