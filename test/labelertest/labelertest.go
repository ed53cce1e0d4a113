package labelertest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// LazyLDFlags is how the binary must be linked.
const LazyLDFlags = "-ldflags=-extldflags=-Wl,-z,lazy"

// Builder builds the binary once per test package.
type Builder struct {
	// Dir is where the binary goes (the package's temporary directory).
	Dir string
	// Package is the path of cmd/gpuctl-node-labeler relative to the test's directory.
	Package string

	once sync.Once
	path string
	err  error
}

// Main runs a test package's tests with a temporary directory for the binary and one local
// cluster (testcluster.Main), for TestMain: os.Exit(labeler.Main(m)).
func (b *Builder) Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gpuctl-node-labeler-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "labelertest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	b.Dir = dir
	return testcluster.Main(m, testcluster.Options{})
}

// Binary builds the binary on first use and returns its path.
func (b *Builder) Binary(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		b.path = filepath.Join(b.Dir, "gpuctl-node-labeler")
		cmd := exec.Command("go", "build", LazyLDFlags, "-o", b.path, b.Package)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if os.Getenv("CGO_CFLAGS") == "" {
			cmd.Env = append(cmd.Env, "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = &buildError{err: err, out: string(out)}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// Command prepares the binary with a clean environment: no NODE_NAME, no KUBECONFIG and no
// LD_BIND_NOW (which would defeat lazy binding). Output goes to the returned buffer.
func (b *Builder) Command(t testing.TB, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(b.Binary(t), args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "LD_BIND_NOW" && k != "NODE_NAME" && k != "KUBECONFIG" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}
