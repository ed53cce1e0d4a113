package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
