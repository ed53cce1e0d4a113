package testcluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Module is the module path whose go.mod marks the repository root.
const Module = "github.com/gpuctl/gpuctl"

// EnvBinDir names the environment variable that points at a directory already holding the
// cluster binaries; when it is set, [Binaries] builds nothing.
const EnvBinDir = "GPUCTL_CLUSTER_BIN"

// toolsScript is the build script, relative to the repository root.
const toolsScript = "hack/cluster-tools.sh"

// toolsLockName is the lock file, in [os.TempDir], that serializes runs of [toolsScript] on
// one machine; the script takes it itself unless envToolsLocked says its caller holds it.
const toolsLockName = "gpuctl-cluster-tools.lock"

// envToolsLocked names the environment variable by which [Binaries], holding the lock, tells
// the script not to wait for it.
const envToolsLocked = "GPUCTL_TOOLS_LOCKED"

// binaryNames lists the executables a cluster needs, in start order.
var binaryNames = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// Binaries returns the directory holding etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok (and, when the script built it, kueue with its manifests, which only
// Options.Kueue needs). It honours GPUCTL_CLUSTER_BIN; otherwise it runs hack/cluster-tools.sh
// from the repository root (found by walking up from the current directory), which builds
// whatever is missing and prints the directory last. The script's
// progress goes to log (which may be nil). Concurrent callers on one machine, and the
// script run by hand or by make demo, build one at a time.
func Binaries(ctx context.Context, log io.Writer) (dir string, err error) {
	if log == nil {
		log = io.Discard
	}
	if dir := os.Getenv(EnvBinDir); dir != "" {
		return dir, checkBinaries(dir)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(os.TempDir(), toolsLockName))
	if err != nil {
		return "", err
	}
	defer unlock()
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, toolsScript))
	cmd.Dir = root
	if runtime.GOOS == "linux" { // where lockFile locks (sys_linux.go)
		cmd.Env = append(os.Environ(), envToolsLocked+"=1")
	}
	cmd.Stdout = &stdout
	cmd.Stderr = log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s failed: %w (its progress went to the cluster log)", toolsScript, err)
	}
	dir = lastLine(stdout.String())
	if dir == "" {
		return "", fmt.Errorf("%s printed no directory", toolsScript)
	}
	return dir, checkBinaries(dir)
}

// RepoRoot walks up from the current directory to the directory whose go.mod declares
// [Module].
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if moduleOf(filepath.Join(dir, "go.mod")) == Module {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the current directory; run from inside the repository or set %s", Module, EnvBinDir)
		}
		dir = parent
	}
}

// moduleOf returns the module path declared by the go.mod at path, or "".
func moduleOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// checkBinaries reports which of the needed executables dir lacks.
func checkBinaries(dir string) error {
	var missing []string
	for _, name := range binaryNames {
		if !isExecutable(filepath.Join(dir, name)) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks executable %s", dir, strings.Join(missing, ", "))
	}
	return nil
}

// checkComponent reports whether the binaries directory lacks the executable name (Kueue's,
// JobSet's: a component that only some clusters start), saying what builds it.
func (c *Cluster) checkComponent(name string) error {
	if !isExecutable(filepath.Join(c.bin, name)) {
		return fmt.Errorf("%s lacks executable %s; %s builds it", c.bin, name, toolsScript)
	}
	return nil
}

// isExecutable tells whether path is a file that may be executed.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// lastLine returns the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
