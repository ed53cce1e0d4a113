package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// cleanEnv is the test's environment without what would change how a binary loads or which
// cluster it talks to.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "LD_") && k != "NODE_NAME" && k != "KUBECONFIG" {
			env = append(env, kv)
		}
	}
	return env
}

func runCmd(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if cmd.Env == nil {
		cmd.Env = cleanEnv()
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	return out.String()
}

// TestStaticBinariesRun runs gpuctl and gpuctl-reconciler from their unpacked images: static,
// stamped with the version.
func TestStaticBinariesRun(t *testing.T) {
	opts, results := buildImages(t)
	for _, n := range []string{"gpuctl", "gpuctl-reconciler"} {
		t.Run(n, func(t *testing.T) {
			fs := unpack(t, n, platformImage(t, results[n], opts.Version))
			bin := filepath.Join(fs.Dir, "usr/local/bin", n)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			libs, _ := f.ImportedLibraries()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || len(libs) > 0 {
					t.Errorf("%s is dynamically linked (libraries %v)", n, libs)
					break
				}
			}
			f.Close()
			arg := "--version"
			if n == "gpuctl" {
				arg = "version" // a command of the CLI
			}
			out := runCmd(t, exec.Command(bin, arg))
			if !strings.Contains(out, "gpuctl "+opts.Version+" ") || !strings.Contains(out, "linux/amd64") {
				t.Errorf("%s %s printed %q, want gpuctl %s ... linux/amd64", n, arg, out, opts.Version)
			}
		})
	}
}

// TestNodeLabelerRunsOnImageGlibc runs gpuctl-node-labeler against the local cluster with
// go-nvml's DGX H100 mock through the image's own dynamic loader and libc, never the host's:
// with the loader of the unpacked image and its library directories, and, as root, chrooted
// into the image as the user 65532, as a container runtime would.
func TestNodeLabelerRunsOnImageGlibc(t *testing.T) {
	opts, results := buildImages(t)
	fs := unpack(t, "gpuctl-node-labeler", platformImage(t, results["gpuctl-node-labeler"], opts.Version))
	bin := filepath.Join(fs.Dir, "usr/local/bin/gpuctl-node-labeler")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	f.Close()
	if interp != "/lib64/ld-linux-x86-64.so.2" {
		t.Fatalf("interpreter %q, want glibc's /lib64/ld-linux-x86-64.so.2", interp)
	}
	loader := fs.resolve(t, interp)
	libPath := filepath.Join(fs.Dir, "lib/x86_64-linux-gnu") + ":" + filepath.Join(fs.Dir, "usr/lib/x86_64-linux-gnu")
	viaLoader := func(args ...string) *exec.Cmd {
		return exec.Command(loader, append([]string{"--library-path", libPath, bin}, args...)...)
	}

	t.Run("libraries from the image", func(t *testing.T) {
		out := runCmd(t, exec.Command(loader, "--list", "--library-path", libPath, bin))
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			_, target, ok := strings.Cut(line, "=>")
			if !ok {
				continue // the loader itself and linux-vdso
			}
			if !strings.HasPrefix(strings.TrimSpace(target), fs.Dir+"/") {
				t.Errorf("resolved outside the image: %s", strings.TrimSpace(line))
			}
		}
		if !strings.Contains(out, "libc.so.6 => "+fs.Dir) {
			t.Errorf("libc.so.6 not from the image:\n%s", out)
		}
	})

	t.Run("--version", func(t *testing.T) {
		if out := runCmd(t, viaLoader("--version")); !strings.Contains(out, "gpuctl "+opts.Version+" ") {
			t.Errorf("--version printed %q", out)
		}
	})

	c := testcluster.Current()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	oneshot := func(t *testing.T, node, kubeconfig string, cmd func(args ...string) *exec.Cmd) {
		t.Helper()
		ctx := context.Background()
		if err := c.AddNode(ctx, testcluster.NodeSpec{Name: node}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DeleteNode(context.Background(), node) })
		runCmd(t, cmd("--nvml=mock:dgxh100", "--oneshot", "--node-name", node, "--kubeconfig", kubeconfig))
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels[keys.GPUType] != "h100-80g" || n.Labels[keys.GPUCount] != "8" {
			t.Errorf("node %s labels %v, want gpu-type h100-80g and gpu-count 8", node, n.Labels)
		}
	}

	t.Run("--nvml=mock:dgxh100 --oneshot via the image's loader", func(t *testing.T) {
		oneshot(t, "img-labeler-0", c.Kubeconfig, viaLoader)
	})

	t.Run("--nvml=mock:dgxh100 --oneshot chrooted as 65532", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chroot needs root; the run through the image's loader covers the libraries")
		}
		// The kubeconfig (with its CA and token inline) goes where the user 65532 can read it.
		kc, err := os.ReadFile(c.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fs.Dir, "tmp", "kubeconfig"), kc, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(filepath.Join(fs.Dir, "tmp", "kubeconfig")) })
		oneshot(t, "img-labeler-1", "/tmp/kubeconfig", func(args ...string) *exec.Cmd {
			cmd := exec.Command("/usr/local/bin/gpuctl-node-labeler", args...)
			cmd.Dir = "/"
			cmd.Env = []string{"PATH=" + Path, "HOME=/home/nonroot"}
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: fs.Dir, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
			return cmd
		})
	})
}
