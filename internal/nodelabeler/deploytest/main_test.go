package deploytest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/internal/testcluster"
)

var (
	binDir    string
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gpuctl-node-labeler-deploytest-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	binDir = dir
	return testcluster.Main(m, testcluster.Options{})
}

// binary builds the real binary once, linked lazily as the Makefile does.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binPath = filepath.Join(binDir, "gpuctl-node-labeler")
		cmd := exec.Command("go", "build", "-ldflags=-extldflags=-Wl,-z,lazy", "-o", binPath, "../../../cmd/gpuctl-node-labeler")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if os.Getenv("CGO_CFLAGS") == "" {
			cmd.Env = append(cmd.Env, "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// command prepares the binary with no NODE_NAME, KUBECONFIG or LD_BIND_NOW from outside.
func command(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "LD_BIND_NOW" && k != "NODE_NAME" && k != "KUBECONFIG" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// addNode creates a fake node without GPU labels, deleted when the test ends.
func addNode(t *testing.T, name string) {
	t.Helper()
	c := testcluster.Current()
	if err := c.AddNode(context.Background(), testcluster.NodeSpec{Name: name}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNode(context.Background(), name) })
}

func nodeLabels(t *testing.T, client kubernetes.Interface, name string) map[string]string {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Labels
}
