package main

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/labelertest"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// lazyLDFlags is how the binary must be linked (see main.go).
const lazyLDFlags = labelertest.LazyLDFlags

var labeler = &labelertest.Builder{Package: "."}

func TestMain(m *testing.M) { os.Exit(labeler.Main(m)) }

// runOnce runs one pass of the binary against the test cluster.
func runOnce(t *testing.T, node, nvml string) string {
	t.Helper()
	cmd, out := labeler.Command(t, "--oneshot", "--node-name", node, "--nvml", nvml,
		"--kubeconfig", testcluster.Current().Kubeconfig, "--log-format", "json")
	if err := cmd.Run(); err != nil {
		t.Fatalf("--nvml=%s --oneshot: %v\n%s", nvml, err, out)
	}
	return out.String()
}

// addNode creates a fake node without GPU labels, deleted when the test ends.
func addNode(t *testing.T, name string) kubernetes.Interface {
	t.Helper()
	c := testcluster.Current()
	ctx := context.Background()
	if err := c.AddNode(ctx, testcluster.NodeSpec{Name: name}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNode(context.Background(), name) })
	return kubernetes.NewForConfigOrDie(c.RESTConfig())
}

func nodeLabels(t *testing.T, client kubernetes.Interface, name string) (map[string]string, *corev1.Node) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Labels, n
}

// gpuLabels returns the g8s.host/ labels, except the pool that gpuctl sets.
func gpuLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if strings.HasPrefix(k, keys.Prefix) && k != keys.Pool {
			out[k] = v
		}
	}
	return out
}

// TestBinaryStartsWithoutDriver is the regression test of the lazy-binding trap: go-nvml
// leaves NVML's symbols undefined, and a binary bound eagerly dies at start on a machine
// without the NVIDIA driver ("symbol lookup error: ... undefined symbol: nvml...").
func TestBinaryStartsWithoutDriver(t *testing.T) {
	bin := labeler.Binary(t)
	t.Run("linked lazily", func(t *testing.T) {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, tag := range []elf.DynTag{elf.DT_FLAGS, elf.DT_FLAGS_1} {
			vals, _ := f.DynValue(tag)
			for _, v := range vals {
				if (tag == elf.DT_FLAGS && v&uint64(elf.DF_BIND_NOW) != 0) || (tag == elf.DT_FLAGS_1 && v&uint64(elf.DF_1_NOW) != 0) {
					t.Errorf("%s has %v=%#x: bound at load time, dies without the driver", bin, tag, v)
				}
			}
		}
	})
	for _, args := range [][]string{{"--help"}, {"--version"}} {
		t.Run(args[0], func(t *testing.T) {
			cmd, out := labeler.Command(t, args...)
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			if !strings.Contains(out.String(), "gpuctl") {
				t.Errorf("%v printed %q", args, out)
			}
		})
	}
	t.Run("--nvml=real --oneshot", func(t *testing.T) {
		const node = "nl-nodriver-0"
		client := addNode(t, node)
		out := runOnce(t, node, "real")
		labels, _ := nodeLabels(t, client, node)
		if !strings.Contains(out, "NVML unavailable") {
			t.Skipf("this machine has an NVIDIA driver; labels %v\n%s", gpuLabels(labels), out)
		}
		if want := map[string]string{keys.GPUCount: "0"}; !maps.Equal(gpuLabels(labels), want) {
			t.Errorf("no driver: labels %v, want %v\n%s", gpuLabels(labels), want, out)
		}
	})
}

// mockLabels are the labels the labeler publishes for go-nvml's mocks.
var mockLabels = map[string]map[string]string{
	"mock:dgxa100": {keys.GPUType: "a100-40g", keys.GPUProduct: "Mock-NVIDIA-A100-SXM4-40GB",
		keys.GPUCount: "8", keys.GPUMemory: "40960", keys.GPUFamily: "ampere", keys.DriverVersion: "550.54.15", keys.CUDAVersion: "12.4"},
	"mock:dgxh100": {keys.GPUType: "h100-80g", keys.GPUProduct: "NVIDIA-H100-80GB-HBM3",
		keys.GPUCount: "8", keys.GPUMemory: "81920", keys.GPUFamily: "hopper", keys.DriverVersion: "550.54.15", keys.CUDAVersion: "12.4"},
}

// TestBinaryDryRun: --dry-run prints each mock's labels as sorted key=value lines on stdout
// and exits 0 without any cluster (no --kubeconfig, no $KUBECONFIG, a $HOME without ~/.kube,
// no node name). Without a driver, --nvml real --dry-run exits non-zero with NVML's error
// in one line and prints no label.
func TestBinaryDryRun(t *testing.T) {
	home := t.TempDir()
	dryRun := func(t *testing.T, nvml string) (stdout, stderr string, err error) {
		t.Helper()
		cmd, _ := labeler.Command(t, "--nvml", nvml, "--dry-run")
		cmd.Env = append(cmd.Env, "HOME="+home, "KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT=")
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err = cmd.Run()
		return o.String(), e.String(), err
	}
	for nvml, labels := range mockLabels {
		t.Run(nvml, func(t *testing.T) {
			var want strings.Builder
			for _, k := range slices.Sorted(maps.Keys(labels)) {
				want.WriteString(k + "=" + labels[k] + "\n")
			}
			stdout, stderr, err := dryRun(t, nvml)
			if err != nil || stdout != want.String() || stderr != "" {
				t.Errorf("--nvml %s --dry-run: %v\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", nvml, err, stdout, want.String(), stderr)
			}
		})
	}
	t.Run("real", func(t *testing.T) {
		stdout, stderr, err := dryRun(t, "real")
		if !nvmlMissing(t) {
			t.Logf("this machine has an NVIDIA driver: %v\n%s%s", err, stdout, stderr)
			if err != nil || !strings.Contains(stdout, keys.GPUCount+"=") {
				t.Errorf("--nvml real --dry-run with a driver: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			return
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("--nvml real --dry-run without a driver: %v, want a non-zero exit\n%s%s", err, stdout, stderr)
		}
		if stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "libnvidia-ml.so.1 not found") {
			t.Errorf("without a driver: stdout %q, stderr %q; want no label and one line naming libnvidia-ml.so.1", stdout, stderr)
		}
	})
}

// TestBinaryMocksAgainstCluster runs the binary over go-nvml's DGX A100 then DGX H100 mock,
// then without a driver, on one fake node: each run's labels replace the last run's, and
// labels that others set stay.
func TestBinaryMocksAgainstCluster(t *testing.T) {
	const node = "nl-mock-0"
	client := addNode(t, node)
	ctx := context.Background()
	// Labels of others: kwok's type (set at creation), a rack label applied by another
	// manager, and a pool label applied by gpuctl.
	for manager, l := range map[string]map[string]string{"rack-tool": {"example.com/rack": "r7"}, keys.FieldManager: {keys.Pool: "training"}} {
		if _, err := client.CoreV1().Nodes().Apply(ctx, corev1ac.Node(node).WithLabels(l), metav1.ApplyOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	others := func(t *testing.T, l map[string]string) {
		t.Helper()
		for k, v := range map[string]string{"type": "kwok", "example.com/rack": "r7", keys.Pool: "training", corev1.LabelHostname: node} {
			if l[k] != v {
				t.Errorf("label %s = %q, want %q (not the labeler's)", k, l[k], v)
			}
		}
	}
	steps := []struct {
		nvml string
		want map[string]string
	}{
		{"mock:dgxa100", mockLabels["mock:dgxa100"]},
		{"mock:dgxh100", mockLabels["mock:dgxh100"]},
		// Unchanged: a second run writes nothing.
		{"mock:dgxh100", mockLabels["mock:dgxh100"]},
	}
	if !nvmlMissing(t) {
		t.Log("this machine has an NVIDIA driver; the no-driver step is left out")
	} else {
		steps = append(steps, struct {
			nvml string
			want map[string]string
		}{"real", map[string]string{keys.GPUCount: "0"}})
	}
	lastRV := ""
	for i, s := range steps {
		out := runOnce(t, node, s.nvml)
		labels, n := nodeLabels(t, client, node)
		if got := gpuLabels(labels); !maps.Equal(got, s.want) {
			t.Errorf("step %d (--nvml=%s): labels\n got %v\nwant %v\n%s", i, s.nvml, got, s.want, out)
		}
		others(t, labels)
		owned := appliedLabels(t, n)
		if !maps.Equal(owned, keySet(s.want)) {
			t.Errorf("step %d: the labeler's apply owns %v, want %v", i, owned, keySet(s.want))
		}
		if i == 2 {
			if !strings.Contains(out, `"msg":"labels unchanged"`) || n.ResourceVersion != lastRV {
				t.Errorf("step %d: same labels again wrote the node (rv %s -> %s)\n%s", i, lastRV, n.ResourceVersion, out)
			}
		}
		lastRV = n.ResourceVersion
	}
}

// TestBinaryRunsUntilSignalled runs the daemon mode: a pass at start, then one every
// interval, until SIGTERM, which ends it with status 0.
func TestBinaryRunsUntilSignalled(t *testing.T) {
	const node = "nl-loop-0"
	client := addNode(t, node)
	cmd, out := labeler.Command(t, "--interval", "200ms", "--nvml", "mock:dgxh100",
		"--kubeconfig", testcluster.Current().Kubeconfig)
	cmd.Env = append(cmd.Env, "NODE_NAME="+node)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		labels, _ := nodeLabels(t, client, node)
		if labels[keys.GPUType] == "h100-80g" && strings.Count(out.String(), "labels unchanged") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("no labels, or fewer than 3 passes, after 20s\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, out)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 10s after SIGTERM\n%s", out)
	}
}

// nvmlMissing reports whether this machine has no NVIDIA driver library.
func nvmlMissing(t *testing.T) bool {
	t.Helper()
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/lib/aarch64-linux-gnu"} {
		if _, err := os.Stat(filepath.Join(dir, "libnvidia-ml.so.1")); err == nil {
			return false
		}
	}
	return true
}

// appliedLabels returns the labels the labeler owns through apply.
func appliedLabels(t *testing.T, n *corev1.Node) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, mf := range n.ManagedFields {
		if mf.Manager != keys.NodeLabelerFieldManager || mf.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		var fields struct {
			Metadata struct {
				Labels map[string]any `json:"f:labels"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			t.Fatal(err)
		}
		for k := range fields.Metadata.Labels {
			out[strings.TrimPrefix(k, "f:")] = true
		}
	}
	return out
}

func keySet(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
