package deploytest

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/test/labelertest"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

var labeler = &labelertest.Builder{Package: "../../cmd/gpuctl-node-labeler"}

func TestMain(m *testing.M) { os.Exit(labeler.Main(m)) }

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
