package multinode

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/testcluster"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{JobSet: true})) }

// waitTimeout bounds each wait of a test.
const waitTimeout = 60 * time.Second

// newClient returns a client of the package's cluster.
func newClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	return testcluster.NewClient(t)
}

// newNamespace creates a namespace for one test, deleted after it.
func newNamespace(t *testing.T) string {
	t.Helper()
	return testcluster.NewNamespace(t, newClient(t))
}

// poll checks cond every 100ms until it holds, failing the test after waitTimeout.
func poll(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	testcluster.Poll(t, what, waitTimeout, cond)
}
