package render_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/secrets/sops"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// keyring reads a test-only age key of secrets/sops/testdata.
func keyring(t *testing.T, name string) *sops.Keyring {
	t.Helper()
	data, err := os.ReadFile("../secrets/sops/testdata/test-only-" + name + ".agekey")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := sops.ParseIdentities(data)
	if err != nil {
		t.Fatal(err)
	}
	return sops.NewKeyring(ids)
}

// encryptedRepo is a repository whose team alice holds the Secret that the sops tool
// encrypted for alice and the admin (secrets/sops/testdata/secret.sops.yaml), at path.
func encryptedRepo(t *testing.T, path string) map[string]string {
	t.Helper()
	enc, err := os.ReadFile("../secrets/sops/testdata/secret.sops.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		".gpuctl.yaml": "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		path:           string(enc),
	}
}

func renderFilesWith(t *testing.T, files map[string]string, opts render.Options) *render.Result {
	t.Helper()
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	res, err := render.New(opts).Render(fs, "/repo")
	if res == nil {
		t.Fatal(err)
	}
	return res // with its errors, if any
}

func findSecret(res *render.Result, name string) *unstructured.Unstructured {
	for _, o := range res.Objects {
		if o.GetKind() == "Secret" && o.GetName() == name {
			return o
		}
	}
	return nil
}

// TestRenderDecryptsTeamSecrets: a file that the sops tool encrypted decrypts in its team's
// directory with the team's key alone; the same file copied into bob's directory is refused
// at its file, naming no value; a render of the unchanged file decrypts nothing again; without
// keys (a laptop) it renders sealed, without its values, and the engine leaves it alone.
func TestRenderDecryptsTeamSecrets(t *testing.T) {
	const value = "hf_FAKEtokenFAKEtokenFAKE0123"
	dec := render.NewDecryptor(keyring(t, "admin"), map[string]*sops.Keyring{"alice": keyring(t, "alice"), "bob": keyring(t, "bob")})
	files := encryptedRepo(t, "teams/alice/credentials.sops.yaml")
	res := renderFilesWith(t, files, render.Options{Decryptor: dec})
	if errs := res.Errors(); len(errs) > 0 {
		t.Fatalf("render: %v", errs)
	}
	s := findSecret(res, "trainer-credentials")
	if s == nil || s.GetNamespace() != "alice" {
		t.Fatalf("no Secret alice/trainer-credentials rendered: %v", res.Objects)
	}
	if got, _, _ := unstructured.NestedString(s.Object, "stringData", "HF_TOKEN"); got != value {
		t.Errorf("stringData.HF_TOKEN = %q, want the decrypted value", got)
	}
	if dec.Decrypted() != 1 {
		t.Errorf("decrypted %d files, want 1", dec.Decrypted())
	}
	cache := render.NewCache(0)
	for range 2 { // the next revisions: the file did not change
		res = renderFilesWith(t, files, render.Options{Decryptor: dec, Cache: cache})
		if findSecret(res, "trainer-credentials") == nil {
			t.Fatal("the Secret is missing from a later render")
		}
	}
	if dec.Decrypted() != 1 {
		t.Errorf("renders of the unchanged file decrypted %d files in all, want the first one only", dec.Decrypted())
	}

	// alice's file in bob's directory: bob's key does not open it (the admin's would).
	stolen := encryptedRepo(t, "teams/bob/credentials.sops.yaml")
	res = renderFilesWith(t, stolen, render.Options{Decryptor: dec})
	errs := res.Errors()
	if len(errs) != 1 || !strings.HasSuffix(errs[0].File, "teams/bob/credentials.sops.yaml") || errs[0].Line < 20 || errs[0].Field != "sops" ||
		!strings.Contains(errs[0].Message, "namespace bob") {
		t.Fatalf("alice's file in bob's directory: %v, want one error at teams/bob/credentials.sops.yaml naming bob's key", errs)
	}
	if strings.Contains(errs[0].Error(), value) || findSecret(res, "trainer-credentials") != nil {
		t.Errorf("alice's file in bob's directory: %v; want no value quoted and no Secret", errs[0])
	}

	// Without keys: sealed, no value, a warning.
	res = renderFilesWith(t, files, render.Options{})
	if errs := res.Errors(); len(errs) > 0 {
		t.Fatalf("render without keys: %v", errs)
	}
	s = findSecret(res, "trainer-credentials")
	if s == nil || s.GetAnnotations()[keys.Encrypted] != keys.EncryptedSealed {
		t.Fatalf("without keys: %v, want the Secret marked sealed", s)
	}
	if got, _, _ := unstructured.NestedString(s.Object, "stringData", "HF_TOKEN"); got != "" || strings.Contains(string(mustJSON(t, s)), "ENC[") {
		t.Errorf("without keys: the Secret holds %q (or SOPS' ciphertext), want no value", got)
	}
	if w := res.Warnings(); len(w) != 1 || !strings.Contains(w[0].Message, "not decrypted here") {
		t.Errorf("without keys: warnings %v, want one saying it is not decrypted", w)
	}
}

func mustJSON(t *testing.T, u *unstructured.Unstructured) []byte {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
