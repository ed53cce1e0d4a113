package dcgmtest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// gpuPod is a pod on node whose one container asks for n GPUs.
func gpuPod(ns, name, node string, n int64) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)},
		}}}},
	}
}

// TestForPods: one GPU per requested unit of bound, live pods, indexed per node in name order,
// with UUIDs that depend on node and index only.
func TestForPods(t *testing.T) {
	done := gpuPod("a", "done", "n1", 1)
	done.Status.Phase = corev1.PodSucceeded
	pods := []corev1.Pod{
		gpuPod("b", "w0", "n1", 2),
		gpuPod("a", "w1", "n1", 1),
		gpuPod("a", "pending", "", 4),
		done,
		gpuPod("a", "w2", "n2", 1),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cpu"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main"}}}},
	}
	got := ForPods(pods)
	type want struct {
		node, ns, pod string
		index         int
	}
	wants := []want{{"n1", "a", "w1", 0}, {"n1", "b", "w0", 1}, {"n1", "b", "w0", 2}, {"n2", "a", "w2", 0}}
	if len(got) != len(wants) {
		t.Fatalf("got %d GPUs, want %d: %+v", len(got), len(wants), got)
	}
	seen := map[string]bool{}
	for i, w := range wants {
		g := got[i]
		if g.Node != w.node || g.Namespace != w.ns || g.Pod != w.pod || g.Index != w.index || g.Container != "main" ||
			g.UUID != UUID(w.node, w.index) || g.Model != DefaultModel || g.MemTotalMiB != DefaultMemTotalMiB {
			t.Errorf("GPU %d = %+v, want %+v", i, g, w)
		}
		if seen[g.UUID] || len(g.UUID) != len("GPU-01234567-89ab-cdef-0123-456789abcdef") {
			t.Errorf("UUID %q repeated or malformed", g.UUID)
		}
		seen[g.UUID] = true
	}
}
