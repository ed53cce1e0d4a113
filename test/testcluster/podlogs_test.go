package testcluster_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// A pod's log goes through the API server's real path: kube-apiserver → the node's kubelet
// endpoint (kwok) → the file WritePodLog appends to. A follow sees a line written after the
// stream opened, within a second; --previous reads the previous instance's file.
func TestPodLogsThroughTheAPIServer(t *testing.T) {
	c, client, ns := testcluster.Current(), newClient(t), newNamespace(t)
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), gpuPod("logger", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, client, ns, "logger", corev1.PodRunning)
	target := testcluster.LogTarget{Namespace: ns, Pod: "logger", Container: "main"}
	if err := c.WritePodLog(t.Context(), target, "epoch 1 loss 0.9", "epoch 2 loss 0.7"); err != nil {
		t.Fatal(err)
	}
	prev := target
	prev.Previous = true
	if err := c.WritePodLog(t.Context(), prev, "CUDA out of memory"); err != nil {
		t.Fatal(err)
	}

	body, err := client.CoreV1().Pods(ns).GetLogs("logger", &corev1.PodLogOptions{Container: "main"}).DoRaw(t.Context())
	if err != nil || string(body) != "epoch 1 loss 0.9\nepoch 2 loss 0.7\n" {
		t.Fatalf("log %q, %v", body, err)
	}
	tail := int64(1)
	body, err = client.CoreV1().Pods(ns).GetLogs("logger", &corev1.PodLogOptions{TailLines: &tail}).DoRaw(t.Context())
	if err != nil || string(body) != "epoch 2 loss 0.7\n" {
		t.Fatalf("tail 1: %q, %v", body, err)
	}
	body, err = client.CoreV1().Pods(ns).GetLogs("logger", &corev1.PodLogOptions{Previous: true}).DoRaw(t.Context())
	if err != nil || string(body) != "CUDA out of memory\n" {
		t.Fatalf("previous: %q, %v", body, err)
	}

	lines := followLog(t, client, ns, "logger")
	for _, want := range []string{"epoch 1 loss 0.9", "epoch 2 loss 0.7"} {
		if got := <-lines; got != want {
			t.Fatalf("follow: %q, want %q", got, want)
		}
	}
	written := time.Now()
	if err := c.WritePodLog(t.Context(), target, "epoch 3 loss 0.5"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-lines:
		if got != "epoch 3 loss 0.5" {
			t.Fatalf("follow: %q after the write", got)
		}
		if d := time.Since(written); d > time.Second {
			t.Errorf("the appended line took %s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not see the appended line")
	}
}
