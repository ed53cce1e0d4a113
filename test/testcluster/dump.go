package testcluster

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DumpOnFailure logs, when the test has failed, the events and the pods of namespace ns (phase,
// node, conditions): what a test of pods that did not do what it waited for needs to be read.
func DumpOnFailure(t *testing.T, client kubernetes.Interface, ns string) {
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
