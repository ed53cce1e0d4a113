package app_test

import (
	"encoding/base64"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuctl/gpuctl/secrets/sops"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// The test-only keys of secrets/sops/testdata (its README.md): never for a real secret.
const (
	testAliceRecipient = "age1tvkft5ntwk4vc33hw8ldkeas6r8ckpltqh9czcxk5m5970lh5vxswa92qp"
	testAdminRecipient = "age1jwl9qmps788lqmavuj9r79s98dddy6uaxt8q8n6s6mapfkvj9y4qq07swe"
)

// newSecretsClone is newClone with secrets: recipients for alice and the admin (none for bob).
func newSecretsClone(t *testing.T) string {
	t.Helper()
	gitUser(t, "alice@example.com")
	files := maps.Clone(gitOpsFiles)
	files[".gpuctl.yaml"] += "secrets:\n  admin: [" + testAdminRecipient + "]\n  teams:\n    alice: [" + testAliceRecipient + "]\n"
	rem := gittest.New(t, nil)
	rem.Commit("initial", files)
	clone := filepath.Join(t.TempDir(), "gitops")
	git(t, filepath.Dir(clone), "clone", "-q", rem.URL, clone)
	return clone
}

// testIdentities reads a test-only key of secrets/sops/testdata.
func testIdentities(t *testing.T, who string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "secrets", "sops", "testdata", "test-only-"+who+".agekey"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// assertNoValue fails when text holds one of the values, or its base64.
func assertNoValue(t *testing.T, what, text string, values ...string) {
	t.Helper()
	for _, v := range values {
		if strings.Contains(text, v) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(v))) {
			t.Errorf("%s holds the value %q:\n%s", what, v, text)
		}
	}
}

func TestSecretCreateCommitsAnEncryptedSecret(t *testing.T) {
	clone := newSecretsClone(t)
	dir := t.TempDir()
	const (
		token = "hf_TESTONLYtokenValue123"
		wandb = "wandb-TESTONLY-0042"
		creds = "[default]\naws_secret_access_key = TESTONLYs3key\n"
	)
	binary := []byte{0xff, 0xfe, 0x00, 0x01}
	env := writeFile(t, dir, "wandb.env", "# W&B\n\nWANDB_API_KEY="+wandb+"\n")
	cred := writeFile(t, dir, "credentials", creds)
	bin := writeFile(t, dir, "blob", string(binary))
	values := []string{token, wandb, "TESTONLYs3key"}
	args := []string{"secret", "create", "hf-token", "-n", "alice", "--repo", clone,
		"--from-literal", "HF_TOKEN=" + token, "--from-env-file", env, "--from-file", cred, "--from-file", "raw=" + bin}
	head := git(t, clone, "rev-parse", "HEAD")

	out, errOut, code := run(t, append(args, "--dry-run")...)
	if code != 0 {
		t.Fatalf("--dry-run: exit %d:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "+++ b/teams/alice/hf-token.sops.yaml") || !strings.Contains(out, "+    HF_TOKEN: ENC[AES256_GCM,") {
		t.Errorf("--dry-run does not show the encrypted file:\n%s", out)
	}
	assertNoValue(t, "--dry-run's output", out+errOut, values...)
	if got := git(t, clone, "rev-parse", "HEAD"); got != head || git(t, clone, "status", "--porcelain") != "" {
		t.Fatalf("--dry-run changed the repository")
	}

	out, errOut, code = run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	assertNoValue(t, "the output", out+errOut, values...)
	if strings.Contains(errOut, "warning") {
		t.Errorf("warnings:\n%s", errOut)
	}
	if files := git(t, clone, "show", "--name-status", "--format=", "HEAD"); files != "A\tteams/alice/hf-token.sops.yaml" {
		t.Fatalf("commit holds:\n%s", files)
	}
	if msg := git(t, clone, "log", "-1", "--format=%s"); msg != "gpuctl: create Secret hf-token (alice)" {
		t.Errorf("commit message: %s", msg)
	}
	committed := []byte(git(t, clone, "show", "HEAD:teams/alice/hf-token.sops.yaml"))
	if !sops.IsEncrypted(committed) {
		t.Fatalf("not a SOPS file:\n%s", committed)
	}
	assertNoValue(t, "the committed file", string(committed), values...)
	if got, err := sops.Recipients(committed); err != nil || strings.Join(got, ",") != testAliceRecipient+","+testAdminRecipient {
		t.Errorf("recipients %v, %v; want alice's and the admin's", got, err)
	}

	for _, who := range []string{"alice", "admin"} {
		ids, err := sops.ParseIdentities(testIdentities(t, who))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := sops.Decrypt(committed, ids)
		if err != nil {
			t.Fatalf("%s's key: %v", who, err)
		}
		var secret struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Data     map[string][]byte
			Strings  map[string]string `json:"stringData"`
		}
		if err := yaml.Unmarshal(plain, &secret); err != nil {
			t.Fatalf("decrypted: %v\n%s", err, plain)
		}
		if secret.Kind != "Secret" || secret.Metadata.Name != "hf-token" || secret.Metadata.Namespace != "alice" {
			t.Errorf("decrypted with %s's key: %+v", who, secret)
		}
		want := map[string]string{"HF_TOKEN": token, "WANDB_API_KEY": wandb, "credentials": creds}
		if !maps.Equal(secret.Strings, want) || len(secret.Data) != 1 || string(secret.Data["raw"]) != string(binary) {
			t.Errorf("decrypted with %s's key: stringData %q, data %q", who, secret.Strings, secret.Data)
		}
	}
	bob, err := sops.ParseIdentities(testIdentities(t, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	var noKey *sops.NoKeyError
	if _, err := sops.Decrypt(committed, bob); !errors.As(err, &noKey) {
		t.Errorf("bob's key: %v; want a NoKeyError", err)
	}

	// A second create of the same name is refused, the first file kept.
	_, errOut, code = run(t, "secret", "create", "hf-token", "-n", "alice", "--repo", clone, "--from-literal", "HF_TOKEN=other")
	if code != 1 || !strings.Contains(errOut, "secret hf-token: teams/alice/hf-token.sops.yaml exists") {
		t.Errorf("second create: exit %d, %s", code, errOut)
	}
}

func TestSecretCreateRefusals(t *testing.T) {
	clone := newSecretsClone(t)
	head := git(t, clone, "rev-parse", "HEAD")
	dir := t.TempDir()
	const value = "TESTONLY-never-shown"
	cases := map[string]struct {
		args []string
		want string
	}{
		"team without recipients": {args: []string{"s", "-n", "bob", "--from-literal", "K=" + value},
			want: "error: secrets.teams.bob of .gpuctl.yaml lists no age recipient"},
		"no keys": {args: []string{"s", "-n", "alice"}, want: "error: no keys: give --from-literal"},
		"literal without =": {args: []string{"s", "-n", "alice", "--from-literal", value},
			want: "error: --from-literal: expected KEY=VALUE (the argument is not shown"},
		"bad key": {args: []string{"s", "-n", "alice", "--from-literal", "a key=" + value},
			want: `error: --from-literal a key: key "a key": a valid config key must consist of alphanumeric characters`},
		"key twice": {args: []string{"s", "-n", "alice", "--from-literal", "K=" + value, "--from-env-file", writeFile(t, dir, "a.env", "# c\nK="+value+"\n")},
			want: "a.env:2: key \"K\" is also given by --from-literal K"},
		"env line without =": {args: []string{"s", "-n", "alice", "--from-env-file", writeFile(t, dir, "b.env", "OK=1\n"+value+"\n")},
			want: "b.env:2: expected KEY=VALUE (the line is not shown"},
		"bad name": {args: []string{"Bad_Name", "-n", "alice", "--from-literal", "K=" + value},
			want: `error: secret name "Bad_Name": a lowercase RFC 1123 subdomain`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"secret", "create", "--repo", clone}, c.args...)...)
			if code != 1 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant %q", code, errOut, c.want)
			}
			assertNoValue(t, "the output", out+errOut, value)
		})
	}
	if got := git(t, clone, "rev-parse", "HEAD"); got != head || git(t, clone, "status", "--porcelain") != "" {
		t.Fatalf("a refusal changed the repository")
	}
}
