package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotifyFlagsCheckedAtStart: a bad --alerts-config stops the daemon at start with its
// file and line; forge flags without a token file, or a token file with a directory source,
// are refused rather than ignored.
func TestNotifyFlagsCheckedAtStart(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "gpuctl-alerts.yaml")
	if err := os.WriteFile(bad, []byte("version: v0.1\nroutes:\n  - provider: nobody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (&NotifyOptions{AlertsConfig: bad}).alerts(nil); err == nil || !strings.Contains(err.Error(), bad+":3") {
		t.Errorf("bad alerts file: %v, want its file:line", err)
	}
	if _, err := (&NotifyOptions{Forge: "github"}).statuses(t.Context(), "git:https://github.com/a/b.git", nil); err == nil {
		t.Error("--forge without --forge-token-file was accepted")
	}
	if _, err := (&NotifyOptions{ForgeTokenFile: bad}).statuses(t.Context(), "dir:/tmp", nil); err == nil {
		t.Error("--forge-token-file with a directory source was accepted")
	}
}
