package multinode

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// dumpOnFailure logs the pods of ns, with their phase and conditions, when the test fails.
func dumpOnFailure(t *testing.T, client kubernetes.Interface, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Logf("list pods of %s: %v", ns, err)
			return
		}
		if evs, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{}); err == nil {
			for _, e := range evs.Items {
				t.Logf("event %s %s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		for _, p := range pods.Items {
			var conds []string
			for _, c := range p.Status.Conditions {
				conds = append(conds, string(c.Type)+"="+string(c.Status))
			}
			t.Logf("pod %s: %s on %s, deleting %v, conditions %s", p.Name, p.Status.Phase, p.Spec.NodeName,
				p.DeletionTimestamp != nil, strings.Join(conds, ","))
		}
	})
}
