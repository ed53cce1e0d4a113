package testcluster_test

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// ServeFakePodLogs (hack/cluster up): a pod that no test writes a log for gets lines of its
// kind, through the API server's log path, appended while it runs (a follow sees them); a pod
// whose log a test writes keeps exactly its own lines; a pod that kwok fails for the demo
// (GPUCTL_DEMO_FAIL=OOMKilled) ends with reason OOMKilled, exit code 137, and a log whose last
// lines say why; a deleted pod loses its log, and a new pod of the same name starts afresh.
func TestFakePodLogs(t *testing.T) {
	c, client, ns := testcluster.Current(), newClient(t), newNamespace(t)
	kindPod := func(name, kind string) *corev1.Pod {
		p := gpuPod(name, 1)
		p.Labels = map[string]string{keys.JobType: kind}
		return p
	}
	// A test's own log, written before the writer starts: the writer leaves it alone.
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), kindPod("own", "training"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, client, ns, "own", corev1.PodRunning)
	own := testcluster.LogTarget{Namespace: ns, Pod: "own", Container: "main"}
	if err := c.WritePodLog(t.Context(), own, "my own line"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- c.ServeFakePodLogs(ctx, testcluster.FakeLogsOptions{Namespaces: []string{ns}, Interval: 200 * time.Millisecond,
			Errors: func(err error) { t.Logf("fake logs: %v", err) }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeFakePodLogs: %v", err)
		}
	}()

	oom := kindPod("oom", "training")
	oom.Spec.Containers[0].Env = []corev1.EnvVar{{Name: testcluster.DemoFailEnv, Value: "OOMKilled"}}
	oom.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("64Gi")
	for _, p := range []*corev1.Pod{kindPod("trainer", "training"), kindPod("server", "inference"), oom} {
		if _, err := client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitLog(t, client, ns, "trainer", "loss=")
	waitLog(t, client, ns, "server", "POST /v1/completions")
	if log := readLog(t, client, ns, "trainer"); !strings.Contains(log, "step 10/1000 loss=") || !strings.Contains(log, "tokens/s=") {
		t.Errorf("trainer's log has no training step:\n%s", log)
	}

	// Following the trainer's log sees a new step within a few rounds.
	lines := followLog(t, client, ns, "trainer")
	had := strings.Count(readLog(t, client, ns, "trainer"), "\n")
	timeout := time.After(5 * time.Second)
	for n := 0; n <= had; n++ {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the follow ended")
			}
			if n == had && !strings.Contains(l, "loss=") {
				t.Errorf("followed line %q: not a training step", l)
			}
		case <-timeout:
			t.Fatalf("follow: no new line after the %d there were", had)
		}
	}

	waitPhase(t, client, ns, "oom", corev1.PodFailed)
	p, err := client.CoreV1().Pods(ns).Get(t.Context(), "oom", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("%s=OOMKilled: container state %+v, want terminated OOMKilled 137", testcluster.DemoFailEnv, p.Status.ContainerStatuses[0].State)
	}
	waitLog(t, client, ns, "oom", "host memory at 97% of the 64Gi limit")

	time.Sleep(time.Second) // five rounds of the writer
	if log := readLog(t, client, ns, "own"); log != "my own line\n" {
		t.Errorf("the log a test wrote: %q, want only its own line", log)
	}

	// A new pod of the same name: its log starts afresh.
	if err := client.CoreV1().Pods(ns).Delete(t.Context(), "trainer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "trainer to be deleted", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "trainer", metav1.GetOptions{})
		return err != nil, nil
	})
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), kindPod("trainer", "notebook"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, client, ns, "trainer", "Jupyter Server")
	if log := readLog(t, client, ns, "trainer"); strings.Contains(log, "loss=") {
		t.Errorf("the new pod's log has the old pod's lines:\n%s", log)
	}
}

// readLog reads a pod's log through the API server ("" when it has none yet).
// followLog follows a pod's log (the API server's pods/log with follow) and sends its lines
// until the stream ends; the stream closes when the test ends.
func followLog(t *testing.T, client kubernetes.Interface, ns, pod string) <-chan string {
	t.Helper()
	stream, err := client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Follow: true}).Stream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Close() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stream)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}

func readLog(t *testing.T, client kubernetes.Interface, ns, pod string) string {
	t.Helper()
	body, _ := client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(t.Context())
	return string(body)
}

// waitLog waits until a pod's log contains want.
func waitLog(t *testing.T, client kubernetes.Interface, ns, pod, want string) {
	t.Helper()
	poll(t, "the log of "+pod+" to contain "+want, func(ctx context.Context) (bool, error) {
		body, err := client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
		return err == nil && strings.Contains(string(body), want), err
	})
}
