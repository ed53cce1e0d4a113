package deploytest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/internal/nodelabeler/labelertest"
	"github.com/gpuctl/gpuctl/internal/testcluster"
)

var labeler = &labelertest.Builder{Package: "../../../cmd/gpuctl-node-labeler"}

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gpuctl-node-labeler-deploytest-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	labeler.Dir = dir
	return testcluster.Main(m, testcluster.Options{})
}

// binary builds the real binary once, linked lazily as the Makefile does.
func binary(t *testing.T) string { return labeler.Binary(t) }

// command prepares the binary with no NODE_NAME, KUBECONFIG or LD_BIND_NOW from outside.
func command(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	return labeler.Command(t, args...)
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
