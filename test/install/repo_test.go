package install

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// module is the module path that `go install` and import paths name.
const module = "github.com/gpuctl/gpuctl"

// repoRoot is the repository's root, relative to this package's directory.
var repoRoot = filepath.Join("..", "..")

// goCmd runs the go command in dir with env added to the test's environment, and returns its
// standard output; a failure ends the test with the command's standard error.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// built holds the gpuctl binary that TestMain's run builds at most once, as kubectl-gpuctl
// and, linked to the same file, as gpuctl.
var built struct {
	once           sync.Once
	dir            string
	plugin, gpuctl string
	err            error
}

// binaries builds cmd/gpuctl from this working tree once per test run, and returns its paths
// as the kubectl plugin kubectl-gpuctl and as gpuctl.
func binaries(t *testing.T) (plugin, gpuctl string) {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "gpuctl-install-"); built.err != nil {
			return
		}
		built.plugin, built.gpuctl = filepath.Join(built.dir, pluginName), filepath.Join(built.dir, "gpuctl")
		cmd := exec.Command("go", "build", "-o", built.plugin, "./cmd/gpuctl")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/gpuctl: %w\n%s", err, out)
			return
		}
		built.err = os.Link(built.plugin, built.gpuctl)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.plugin, built.gpuctl
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// run runs a binary with args and returns its standard output; a failure ends the test.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
