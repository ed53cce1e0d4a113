package render_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

// Files that hold credentials, each as its own content would be read by mistake or malice.
var secretFiles = map[string]string{
	"a service account token":        "eyJhbGciOiJSUzI1NiIsImtpZCI6IkNsdXN0ZXJTZWNyZXQifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlU2VjcmV0Qnl0ZXM",
	"a token that reads as an alias": "*eyJhbGciOiJSUzI1NiIsImtpZCI6IkFsaWFzU2VjcmV0In0",
	"a PEM key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n" +
		"QyNTUxOQAAACDw1aKeySecretMaterialXyZ0123456789abcdefghijklmnopqrstu\n-----END OPENSSH PRIVATE KEY-----\n",
	"an encrypted PEM key (a syntax error)": "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,5A8F3C1DSECRETIV99\n\n" +
		"MIIEowIBAAKCAQEAuSecretKeyMaterialQWERTYUIOPasdfghjklZXCVBNM0123456\n-----END RSA PRIVATE KEY-----\n",
	"a key in a list": "- password: hunter2SecretPassw0rd\n  - [ssh-rsa AAAAB3NzaSecretKeyMaterial",
}

// secretPieces are the distinctive runs of the secret: none may show up in an error.
func secretPieces(secret string) []string {
	var out []string
	for _, p := range regexp.MustCompile(`[A-Za-z0-9+/=._*-]{8,}`).FindAllString(secret, -1) {
		if !strings.HasPrefix(p, "-----") {
			out = append(out, p)
		}
	}
	return out
}

func assertNoSecret(t *testing.T, err error, secret string) {
	t.Helper()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, p := range secretPieces(secret) {
		for _, q := range []string{p, p[:8], p[len(p)-8:]} {
			if strings.Contains(err.Error(), q) {
				t.Fatalf("the error quotes the file's content %q:\n%v", q, err)
			}
		}
	}
}

// TestDiagnosticsNeverQuoteSecrets: a .gpuctl.yaml, a kustomization and a plain manifest that
// hold a token or a key fail to render, and the errors hold none of their bytes.
func TestDiagnosticsNeverQuoteSecrets(t *testing.T) {
	for what, secret := range secretFiles {
		for _, file := range []string{".gpuctl.yaml", "teams/alice/kustomization.yaml", "teams/alice/token.yaml"} {
			t.Run(what+" as "+file, func(t *testing.T) {
				files := map[string]string{file: secret}
				if file != ".gpuctl.yaml" {
					files[".gpuctl.yaml"] = teamsConfig
				}
				_, err := renderFiles(t, files)
				assertNoSecret(t, err, secret)
			})
		}
		t.Run(what+" as --config", func(t *testing.T) {
			_, diags := render.ParseConfig("config.yaml", []byte(secret))
			if len(diags) == 0 {
				t.Fatal("want a diagnostic")
			}
			for _, d := range diags {
				assertNoSecret(t, d, secret)
			}
		})
	}
}

// TestConfigSymlinkRefused: a .gpuctl.yaml that is a symbolic link (here to a token) is
// refused, and the token is not read into any message.
func TestConfigSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	secret := secretFiles["a service account token"]
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tokenFile, filepath.Join(dir, ".gpuctl.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(training), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := render.New(render.Options{}).Render(diskFS(), dir)
	if err == nil || !strings.Contains(err.Error(), ".gpuctl.yaml: the configuration file is a symbolic link") {
		t.Fatalf("want the symlink refused, got %v", err)
	}
	assertNoSecret(t, err, secret)
}

// TestKustomizationSymlinkRefused: a kustomization file that is a symbolic link is refused.
func TestKustomizationSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "k.yaml")
	if err := os.WriteFile(target, []byte("resources: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "app", "kustomization.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := render.New(render.Options{}).Render(diskFS(), dir)
	if err == nil || !strings.Contains(err.Error(), "app/kustomization.yaml: the kustomization file is a symbolic link") {
		t.Fatalf("want the symlink refused, got %v", err)
	}
}
