package install

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// pluginName is the file name under which kubectl finds gpuctl as the plugin `kubectl gpuctl`.
const pluginName = "kubectl-gpuctl"

// TestKubectlPluginName: the gpuctl binary installed as kubectl-gpuctl names itself `kubectl
// gpuctl` in its usage and examples, run as kubectl runs a plugin (its own path as argv[0], the
// arguments after the plugin's name passed through), and answers like gpuctl; the same binary
// under its own name says gpuctl.
func TestKubectlPluginName(t *testing.T) {
	plugin, gpuctl := binaries(t)
	help := run(t, plugin, "get", "jobs", "--help")
	for _, want := range []string{"\n  kubectl gpuctl get jobs [flags]\n", "\n  kubectl gpuctl get jobs -n alice -o wide\n"} {
		if !strings.Contains(help, want) {
			t.Errorf("kubectl-gpuctl get jobs --help lacks %q:\n%s", want, help)
		}
	}
	if out := run(t, plugin, "version"); !strings.HasPrefix(out, "gpuctl ") {
		t.Errorf("kubectl-gpuctl version: %q", out)
	}
	if out := run(t, gpuctl, "--help"); strings.Contains(out, "kubectl gpuctl") || !strings.Contains(out, "\n  gpuctl [command]\n") {
		t.Errorf("gpuctl --help:\n%s", out)
	}
}

// TestKubectlRunsPlugin: the real kubectl finds kubectl-gpuctl on PATH, lists it as a plugin,
// and runs `kubectl gpuctl ...` with the arguments passed through.
func TestKubectlRunsPlugin(t *testing.T) {
	kubectl := findKubectl(t)
	if kubectl == "" {
		t.Skip("no kubectl in the local cluster's cache (GPUCTL_WITH_KUBECTL=1 hack/cluster-tools.sh builds it); TestKubectlPluginName runs the plugin as kubectl does")
	}
	plugin, _ := binaries(t)
	env := []string{"PATH=" + filepath.Dir(plugin) + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}
	viaKubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), kubectl, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := viaKubectl("plugin", "list"); !strings.Contains(out, plugin) {
		t.Errorf("kubectl plugin list does not list %s:\n%s", plugin, out)
	}
	if out := viaKubectl("gpuctl", "get", "jobs", "--help"); !strings.Contains(out, "\n  kubectl gpuctl get jobs [flags]\n") {
		t.Errorf("kubectl gpuctl get jobs --help:\n%s", out)
	}
	if out := viaKubectl("gpuctl", "validate", filepath.Join(repoRoot, "examples", "training")); !strings.Contains(out, "valid: ") {
		t.Errorf("kubectl gpuctl validate examples/training:\n%s", out)
	}
}

// findKubectl returns the kubectl of the local cluster's cache of binaries, where
// GPUCTL_WITH_KUBECTL=1 hack/cluster-tools.sh puts it (the benchmarks' reference), or "". A
// kubectl on PATH is not taken: it may be a vendor's wrapper that fetches a kubectl first.
func findKubectl(t *testing.T) string {
	bins, err := testcluster.Binaries(t.Context(), io.Discard)
	if err != nil {
		t.Logf("the local cluster's binaries: %v", err)
		return ""
	}
	p := filepath.Join(bins, "kubectl")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return p
}
