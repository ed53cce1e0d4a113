package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderPrintsSecretsOnlyWhenAsked: gpuctl render of a team's SOPS-encrypted Secret prints
// it sealed, without values, even with the team's key at hand; --show-secrets prints the
// decrypted values, as sops --decrypt would.
func TestRenderPrintsSecretsOnlyWhenAsked(t *testing.T) {
	const value = "hf_FAKEtokenFAKEtokenFAKE0123" // secrets/sops/testdata/secret.yaml's
	repo, keys := t.TempDir(), t.TempDir()
	write := func(path, from string) {
		t.Helper()
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, ".gpuctl.yaml"), []byte("version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(repo, "teams", "alice", "credentials.sops.yaml"), "../../../secrets/sops/testdata/secret.sops.yaml")
	write(filepath.Join(keys, "alice"), "../../../secrets/sops/testdata/test-only-alice.agekey")

	out, errOut, code := run(t, "render", repo, "--age-keys", keys)
	if code != 0 || strings.Contains(out+errOut, value) || !strings.Contains(out, "name: trainer-credentials") || !strings.Contains(errOut, "not decrypted here") {
		t.Errorf("render without --show-secrets: exit %d; want the Secret sealed, no value, a warning\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = run(t, "render", repo, "--age-keys", keys, "--show-secrets")
	if code != 0 || !strings.Contains(out, value) {
		t.Errorf("render --show-secrets: exit %d; want the decrypted value\n%s\n%s", code, out, errOut)
	}
}
