package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// TestStopCommand: up prints the exact command that stops the cluster it started, --dir
// included, quoted so that a shell reads the directory back unchanged.
func TestStopCommand(t *testing.T) {
	for _, dir := range []string{"/work/.cache/cluster", "/tmp/my clusters/it's here", "/tmp/$HOME/`x`"} {
		msg := upMessage(42, dir)
		_, cmd, ok := strings.Cut(msg, "stop it with: ")
		if !ok || !strings.HasPrefix(cmd, "go run ./hack/cluster down --dir ") {
			t.Fatalf("up says %q: no stop command with --dir", msg)
		}
		// The shell's reading of the command's last word is the directory.
		out, err := exec.Command("sh", "-c", "set -- "+cmd+`; shift 5; printf %s "$*"`).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := string(out); got != dir || filepath.Clean(got) != dir {
			t.Errorf("stop command %q: the shell reads --dir %q, want %q", cmd, got, dir)
		}
	}
}

// TestKueueConfigIsARepositoryPath: --kueue-config takes a file as a shell gives it (relative
// to the current directory, or absolute) and hands serve the path in the repository that
// testcluster.Options.KueueConfig joins to the root; a file outside the repository, or none,
// is an error that names the flag.
func TestKueueConfigIsARepositoryPath(t *testing.T) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.FromSlash(testcluster.MultiKueueManagerConfigFile)
	for _, file := range []string{filepath.Join(root, want), filepath.Join("..", "..", want)} { // the test runs in hack/cluster
		if got, err := repoPath(file); err != nil || got != want {
			t.Errorf("repoPath(%q) = %q, %v; want %q", file, got, err, want)
		}
	}
	outside := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(outside, []byte("kind: Configuration\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, msg := range map[string]string{outside: "not a file of the repository", filepath.Join(root, "deploy", "kueue", "nope.yaml"): "no such file"} {
		if _, err := repoPath(file); err == nil || !strings.Contains(err.Error(), "--kueue-config") || !strings.Contains(err.Error(), msg) {
			t.Errorf("repoPath(%q): error %v, want one naming --kueue-config and saying %q", file, err, msg)
		}
	}
}

// TestServeArgReadsTheRunningConfig: up compares the --kueue-config of a running serve with
// the one asked for by reading serve's command line, where startServe puts each flag as one
// argument (kueueOptions.args); a flag the command line lacks (an older hack/cluster) is "".
func TestServeArgReadsTheRunningConfig(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	args := kueueOptions{on: true, config: testcluster.MultiKueueManagerConfigFile}.args()
	cmd := exec.Command("sh", append([]string{"-c", "sleep 30; :", "serve", "--dir", "/tmp/x"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Until the child has exec'd sh, its command line is the test binary's.
	for deadline := time.Now().Add(10 * time.Second); !serveArgsHave(cmd.Process.Pid, "serve") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := serveArg(cmd.Process.Pid, "--kueue-config"); got != testcluster.MultiKueueManagerConfigFile {
		t.Errorf("serveArg(--kueue-config) of %v = %q, want %q", args, got, testcluster.MultiKueueManagerConfigFile)
	}
	if got := serveArg(cmd.Process.Pid, "--nodes"); got != "" {
		t.Errorf("serveArg(--nodes) of a command line without it = %q, want \"\"", got)
	}
	if !serveArgsHave(cmd.Process.Pid, "--kueue=true") {
		t.Errorf("args %v lack --kueue=true", args)
	}
}
