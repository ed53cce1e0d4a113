package testcluster_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// toolVersions reads the versions that hack/cluster-tools.sh names its cache directory after.
func toolVersions(t *testing.T, root string) map[string]string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(root, "hack/cluster-tools.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z0-9]+)_VERSION=(v\S+)$`).FindAllStringSubmatch(string(script), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestToolVersionsAreTheModules: the versions in hack/cluster-tools.sh (its cache key and the
// version it stamps into the Kubernetes binaries) are those that the tool modules build, so a
// bump of a go.mod cannot leave a stale cache in use or a binary that lies about its version.
func TestToolVersionsAreTheModules(t *testing.T) {
	t.Parallel()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	versions := toolVersions(t, root)
	for _, c := range []struct{ script, gomod, module string }{
		{"K8S", "hack/tools/controlplane/go.mod", "k8s.io/kubernetes"},
		{"ETCD", "hack/tools/controlplane/go.mod", "go.etcd.io/etcd/server/v3"},
		{"KWOK", "hack/tools/controlplane/go.mod", "sigs.k8s.io/kwok"},
		{"KUEUE", "hack/tools/kueue/go.mod", "sigs.k8s.io/kueue"},
		{"JOBSET", "hack/tools/kueue/go.mod", "sigs.k8s.io/jobset"},
	} {
		gomod, err := os.ReadFile(filepath.Join(root, c.gomod))
		if err != nil {
			t.Fatal(err)
		}
		want := versions[c.script]
		if want == "" {
			t.Errorf("hack/cluster-tools.sh sets no %s_VERSION", c.script)
			continue
		}
		if !regexp.MustCompile(`(?m)^\s*(require\s+)?` + regexp.QuoteMeta(c.module) + ` ` + regexp.QuoteMeta(want) + `$`).Match(gomod) {
			t.Errorf("%s does not require %s %s (hack/cluster-tools.sh's %s_VERSION)", c.gomod, c.module, want, c.script)
		}
	}
}

// TestControlPlaneAnswersToEachName: the one control-plane binary runs etcd, the three
// Kubernetes components and kwok by the name it is started under — each the program of that
// name, at the version the script names — and says what it holds when started under another.
func TestControlPlaneAnswersToEachName(t *testing.T) {
	t.Parallel()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	v := toolVersions(t, root)
	dir, err := testcluster.Binaries(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"etcd":                    "etcd Version: " + strings.TrimPrefix(v["ETCD"], "v"),
		"kube-apiserver":          "Kubernetes " + v["K8S"],
		"kube-controller-manager": "Kubernetes " + v["K8S"],
		"kube-scheduler":          "Kubernetes " + v["K8S"],
		"kwok":                    "kwok version " + v["KWOK"],
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		out, err := exec.CommandContext(ctx, filepath.Join(dir, name), "--version").CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s --version: %v\n%s\nwant %q", name, err, out, want)
		}
	}
	// Started under its own name, it names the programs it holds and fails.
	if _, err := os.Stat(filepath.Join(dir, "controlplane")); err != nil && os.Getenv(testcluster.EnvBinDir) != "" {
		return // binaries of the caller's own (GPUCTL_CLUSTER_BIN), not hack/cluster-tools.sh's
	}
	out, err := exec.Command(filepath.Join(dir, "controlplane")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok") {
		t.Errorf("controlplane with no program: %v\n%s", err, out)
	}
}
