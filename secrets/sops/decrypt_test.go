package sops_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"filippo.io/age"
	"go.yaml.in/yaml/v3"

	"github.com/gpuctl/gpuctl/secrets/sops"
)

// The files of testdata/ were made by the sops binary (v3.13.3), with the commands in
// testdata/README.md.

// Recipients of the test-only keys of testdata/.
const (
	aliceRecipient = "age1tvkft5ntwk4vc33hw8ldkeas6r8ckpltqh9czcxk5m5970lh5vxswa92qp"
	adminRecipient = "age1jwl9qmps788lqmavuj9r79s98dddy6uaxt8q8n6s6mapfkvj9y4qq07swe"
	bobRecipient   = "age1aq2a3fkg6zn0ku3sw3uzmsj03qdcygdpfxu2092fp9kpszpeve4q6ur6wa"
)

// secretValues are the values of testdata/secret.yaml that must never appear in an error or
// in the encrypted file, with the base64 of the stringData ones as Kubernetes would store them.
var secretValues = []string{
	"czMtYWNjZXNzLWtleS1GQUtF", "s3-access-key-FAKE",
	"c2VjcmV0LUZBS0UtMTIzNDU2Nzg5", "secret-FAKE-123456789",
	"hf_FAKEtokenFAKEtokenFAKE0123", base64.StdEncoding.EncodeToString([]byte("hf_FAKEtokenFAKEtokenFAKE0123")),
	"wandb-FAKE-0000000000000000", base64.StdEncoding.EncodeToString([]byte("wandb-FAKE-0000000000000000")),
	"https://s3.example.com",
	"base64 of", // the comment inside data, which sops encrypts too
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func identities(t testing.TB, who string) []age.Identity {
	t.Helper()
	ids, err := sops.ParseIdentities(readFile(t, "test-only-"+who+".agekey"))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// sameYAML fails unless a and b hold the same YAML data (comments and layout aside).
func sameYAML(t *testing.T, got, want []byte) {
	t.Helper()
	if g, w := yamlDocs(t, got), yamlDocs(t, want); !reflect.DeepEqual(g, w) {
		t.Errorf("decrypted data differs:\n got %v\nwant %v", g, w)
	}
}

func yamlDocs(t *testing.T, b []byte) []any {
	t.Helper()
	var docs []any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				return docs
			}
			t.Fatalf("not YAML: %v", err)
		}
		docs = append(docs, v)
	}
}

// assertNoSecret fails if s holds a value of secretValues or a private key.
func assertNoSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, v := range secretValues {
		if strings.Contains(s, v) {
			t.Errorf("%s holds the secret value %q: %s", what, v, s)
		}
	}
	if strings.Contains(s, "AGE-SECRET-KEY") {
		t.Errorf("%s holds a private key: %s", what, s)
	}
}

// TestDecryptSopsMadeFiles decrypts the files that sops encrypted, with each key they are
// encrypted for, and compares the result byte for byte with what `sops --decrypt` printed,
// and by data with the plaintext they were made from.
func TestDecryptSopsMadeFiles(t *testing.T) {
	cases := map[string]struct {
		file string
		keys []string
	}{
		"secret, encrypted_regex, two recipients": {"secret", []string{"alice", "admin"}},
		"every YAML type, default rule":           {"types", []string{"alice"}},
		"two documents, mac_only_encrypted":       {"multi", []string{"alice", "admin"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			enc := readFile(t, c.file+".sops.yaml")
			for _, who := range c.keys {
				got, err := sops.Decrypt(enc, identities(t, who))
				if err != nil {
					t.Fatalf("%s: %v", who, err)
				}
				if want := readFile(t, c.file+".sops-decrypted.yaml"); !bytes.Equal(got, want) {
					t.Errorf("%s: differs from sops --decrypt:\n--- got\n%s\n--- sops\n%s", who, got, want)
				}
				sameYAML(t, got, readFile(t, c.file+".yaml"))
			}
		})
	}
}

// TestDecryptWithAnotherTeamsKey: a file that is not encrypted for the key fails with the
// named error listing the file's recipients, and no value or key in it.
func TestDecryptWithAnotherTeamsKey(t *testing.T) {
	_, err := sops.Decrypt(readFile(t, "secret.sops.yaml"), identities(t, "bob"))
	var noKey *sops.NoKeyError
	if !errors.As(err, &noKey) {
		t.Fatalf("err = %v, want a *NoKeyError", err)
	}
	if want := []string{aliceRecipient, adminRecipient}; !reflect.DeepEqual(noKey.Recipients, want) {
		t.Errorf("Recipients = %v, want %v", noKey.Recipients, want)
	}
	want := "no key of this team can decrypt it (encrypted for " + aliceRecipient + ", " + adminRecipient + ")"
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if strings.Contains(err.Error(), bobRecipient) {
		t.Errorf("err names the key that was tried: %v", err)
	}
	assertNoSecret(t, "the error", err.Error())

	if _, err := sops.Decrypt(readFile(t, "secret.sops.yaml"), nil); !errors.As(err, &noKey) {
		t.Errorf("no identities: err = %v, want a *NoKeyError", err)
	}
}

// TestDecryptTampered: a file changed after it was encrypted fails with ErrMACMismatch, at
// the key that was changed where the change is in an encrypted value, and the error never
// holds a value.
func TestDecryptTampered(t *testing.T) {
	enc := string(readFile(t, "secret.sops.yaml"))
	hfLine := lineOf(t, enc, "HF_TOKEN: ENC[")
	flip := func(s, marker string) string {
		// Change one base64 character of the ciphertext after marker (still valid base64).
		i := strings.Index(s, marker) + len(marker)
		c := byte('A')
		if s[i] == 'A' {
			c = 'B'
		}
		return s[:i] + string(c) + s[i+1:]
	}
	cases := map[string]struct {
		file     string
		wantPath string
		wantLine int
	}{
		"a flipped byte in a value's ciphertext": {flip(enc, "HF_TOKEN: ENC[AES256_GCM,data:"), "stringData.HF_TOKEN", hfLine},
		"a flipped byte in a value's tag":        {flip(enc, "S3_ACCESS_KEY: ENC[AES256_GCM,data:rcx+jc3O0ibbakaRe3/VT15TQ2r0LnbV,iv:irr59/D9YQvY0wlnHk3cMycQHeZ9pr9IWbqTlzdSwX4=,tag:"), "data.S3_ACCESS_KEY", 0},
		"a value moved to another key": {strings.Replace(strings.Replace(enc, "    HF_TOKEN: ENC", "    HF_TOKEN_X: ENC", 1), "    WANDB_API_KEY: ENC", "    HF_TOKEN: ENC", 1),
			"stringData.HF_TOKEN_X", 0},
		"a clear value added":                     {strings.Replace(enc, "    EMPTY: \"\"", "    EMPTY: hf_FAKEtokenFAKEtokenFAKE0123", 1), "stringData.EMPTY", 0},
		"a value emptied":                         {emptyValue(enc, "HF_TOKEN"), "sops.mac", 0},
		"an unencrypted field changed":            {strings.Replace(enc, "namespace: alice", "namespace: bob", 1), "sops.mac", 0},
		"an unencrypted field added":              {strings.Replace(enc, "type: Opaque", "type: Opaque\nimmutable_unencrypted: true", 1), "sops.mac", 0},
		"a value's type label changed to comment": {strings.Replace(enc, "TQ2r0LnbV,iv:irr59/D9YQvY0wlnHk3cMycQHeZ9pr9IWbqTlzdSwX4=,tag:UnF9IJpEFrB9FLo5ys9dWg==,type:str]", "TQ2r0LnbV,iv:irr59/D9YQvY0wlnHk3cMycQHeZ9pr9IWbqTlzdSwX4=,tag:UnF9IJpEFrB9FLo5ys9dWg==,type:comment]", 1), "sops.mac", 0},
		"lastmodified changed":                    {strings.Replace(enc, `lastmodified: "2026-11-29T01:04:37Z"`, `lastmodified: "2026-11-29T01:04:38Z"`, 1), "sops.mac", 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.file == enc {
				t.Fatal("the test did not change the file")
			}
			_, err := sops.Decrypt([]byte(c.file), identities(t, "alice"))
			if !errors.Is(err, sops.ErrMACMismatch) {
				t.Fatalf("err = %v, want ErrMACMismatch", err)
			}
			if !strings.Contains(err.Error(), "MAC mismatch: the file was changed after it was encrypted") {
				t.Errorf("err = %q, does not say that the file was changed", err)
			}
			var fe *sops.FormatError
			if !errors.As(err, &fe) || fe.Path != c.wantPath {
				t.Errorf("err = %v, want it at %s", err, c.wantPath)
			}
			if c.wantLine != 0 && fe != nil && fe.Line != c.wantLine {
				t.Errorf("line = %d, want %d", fe.Line, c.wantLine)
			}
			assertNoSecret(t, "the error", err.Error())
		})
	}
}

// emptyValue replaces the value of key (an ENC[...] on one line) by "".
func emptyValue(enc, key string) string {
	i := strings.Index(enc, "    "+key+": ENC[")
	j := i + strings.Index(enc[i:], "\n")
	return enc[:i] + "    " + key + ": \"\"" + enc[j:]
}

// lineOf is the 1-based line of s that holds sub.
func lineOf(t *testing.T, s, sub string) int {
	t.Helper()
	i := strings.Index(s, sub)
	if i < 0 {
		t.Fatalf("%q not found", sub)
	}
	return strings.Count(s[:i], "\n") + 1
}

// TestDecryptMacOnlyEncrypted: with mac_only_encrypted (sops --mac-only-encrypted), the MAC
// covers only the encrypted values, so a changed name passes, as it does with sops.
func TestDecryptMacOnlyEncrypted(t *testing.T) {
	enc := strings.Replace(string(readFile(t, "multi.sops.yaml")), "name: wandb", "name: renamed", 1)
	got, err := sops.Decrypt([]byte(enc), identities(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "name: renamed") {
		t.Errorf("the change is not in the output:\n%s", got)
	}
}

// TestDecryptNotSOPS: files that are not SOPS files, or are malformed ones, fail with a
// clear error that holds no value.
func TestDecryptNotSOPS(t *testing.T) {
	plain := readFile(t, "secret.yaml")
	if _, err := sops.Decrypt(plain, identities(t, "alice")); !errors.Is(err, sops.ErrNotSOPS) {
		t.Errorf("a plain Secret: err = %v, want ErrNotSOPS", err)
	} else {
		assertNoSecret(t, "the error", err.Error())
	}
	enc := string(readFile(t, "secret.sops.yaml"))
	cases := map[string]struct{ file, want string }{
		"not YAML":         {"stringData: [hf_FAKEtokenFAKEtokenFAKE0123\n", "not valid YAML"},
		"a list":           {"- hf_FAKEtokenFAKEtokenFAKE0123\n", "the document is a sequence"},
		"sops not a map":   {"a: b\nsops: hf_FAKEtokenFAKEtokenFAKE0123\n", "sops: not a mapping"},
		"key groups":       {strings.Replace(enc, "    age:\n", "    key_groups: []\n    age:\n", 1), "key groups (Shamir's secret sharing) are not supported"},
		"two rules":        {strings.Replace(enc, "    encrypted_regex:", "    unencrypted_suffix: _x\n    encrypted_regex:", 1), "more than one of"},
		"comment rule":     {strings.Replace(enc, "    encrypted_regex: ^(data|stringData)$", "    encrypted_comment_regex: sops", 1), "encrypted_comment_regex: not supported"},
		"no mac":           {strings.Replace(enc, "    mac: ENC[", "    notmac: ENC[", 1), "sops.mac is missing"},
		"only a pgp key":   {regexpReplaceAge(enc), "encrypted for no age recipient, only for pgp"},
		"a duplicated key": {strings.Replace(enc, "    HF_TOKEN: ENC", "    WANDB_API_KEY: x\n    HF_TOKEN: ENC", 1), "the key is defined twice"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := sops.Decrypt([]byte(c.file), identities(t, "alice"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to say %q", err, c.want)
			}
			assertNoSecret(t, "the error", err.Error())
		})
	}
}

// TestDecryptDamagedDataKey: a broken sops.age entry for the team's own key is named; one
// for another key, when the team's is not there either, is just another key's.
func TestDecryptDamagedDataKey(t *testing.T) {
	enc := string(readFile(t, "secret.sops.yaml"))
	// Break the first (alice's) armored age file: its first base64 line.
	i := strings.Index(enc, "BEGIN AGE ENCRYPTED FILE-----\n") + len("BEGIN AGE ENCRYPTED FILE-----\n")
	i += strings.Index(enc[i:], "YWdl")
	broken := enc[:i] + "!!!!" + enc[i+4:]
	_, err := sops.Decrypt([]byte(broken), identities(t, "alice"))
	if err == nil || !strings.Contains(err.Error(), "sops.age: the data key for "+aliceRecipient+" does not decrypt") {
		t.Errorf("alice: err = %v, want it to name alice's broken data key", err)
	}
	if _, err := sops.Decrypt([]byte(broken), identities(t, "admin")); err != nil {
		t.Errorf("admin, whose entry is whole: %v", err)
	}
	if _, err := sops.Decrypt([]byte(broken), identities(t, "bob")); !errors.As(err, new(*sops.NoKeyError)) {
		t.Errorf("bob: err = %v, want a *NoKeyError", err)
	}
}

// regexpReplaceAge replaces the sops.age list of a file by a pgp entry.
func regexpReplaceAge(enc string) string {
	start := strings.Index(enc, "    age:\n")
	end := strings.Index(enc, "    encrypted_regex:")
	return enc[:start] + "    pgp:\n        - fp: 0123456789ABCDEF\n          enc: x\n          created_at: \"2026-11-29T01:04:37Z\"\n" + enc[end:]
}

// TestIsEncrypted tells SOPS files from others without decrypting.
func TestIsEncrypted(t *testing.T) {
	cases := map[string]struct {
		data []byte
		want bool
	}{
		"sops-made secret":      {readFile(t, "secret.sops.yaml"), true},
		"sops-made two docs":    {readFile(t, "multi.sops.yaml"), true},
		"plain secret":          {readFile(t, "secret.yaml"), false},
		"a key named sops":      {[]byte("sops: yes\n"), false},
		"sops without mac":      {[]byte("a: b\nsops:\n  age: []\n"), false},
		"not YAML":              {[]byte("sops: [\n"), false},
		"sops in a 2nd doc":     {[]byte("a: b\n---\nsops:\n  mac: x\n"), false},
		"sops nested, not top":  {[]byte("a:\n  sops:\n    mac: x\n"), false},
		"empty":                 {nil, false},
		"minimal metadata only": {[]byte("sops:\n  mac: x\n"), true},
	}
	for name, c := range cases {
		if got := sops.IsEncrypted(c.data); got != c.want {
			t.Errorf("%s: IsEncrypted = %v, want %v", name, got, c.want)
		}
	}
}

// TestRecipients lists whom a file is encrypted for without a key.
func TestRecipients(t *testing.T) {
	got, err := sops.Recipients(readFile(t, "secret.sops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{aliceRecipient, adminRecipient}; !reflect.DeepEqual(got, want) {
		t.Errorf("Recipients = %v, want %v", got, want)
	}
	if _, err := sops.Recipients(readFile(t, "secret.yaml")); !errors.Is(err, sops.ErrNotSOPS) {
		t.Errorf("a plain file: err = %v, want ErrNotSOPS", err)
	}
}

// TestDecryptManyRecipients: a file whose sops.age lists more entries than any file needs
// (a team's file crafted to cost an X25519 exchange per entry at every render) is refused at
// sops.age before any entry is tried, and Encrypt does not write one.
func TestDecryptManyRecipients(t *testing.T) {
	var rs []string
	for range 65 {
		id, err := age.GenerateX25519Identity()
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, id.Recipient().String())
	}
	if _, err := sops.Encrypt(readFile(t, "secret.yaml"), rs); err == nil || !strings.Contains(err.Error(), "more than 64") {
		t.Errorf("Encrypt for 65 recipients: %v, want an error", err)
	}
	enc, err := sops.Encrypt(readFile(t, "secret.yaml"), rs[:1])
	if err != nil {
		t.Fatal(err)
	}
	// The one entry, 65 times: the MAC does not cover sops.age.
	one := regexp.MustCompile(`(?s)\n    age:\n(        - enc: .*?\n          recipient: \S+\n)`).FindStringSubmatch(string(enc))
	if one == nil {
		t.Fatalf("no sops.age entry found in\n%s", enc)
	}
	crafted := strings.Replace(string(enc), one[1], strings.Repeat(one[1], 65), 1)
	_, err = sops.Decrypt([]byte(crafted), identities(t, "bob"))
	var fe *sops.FormatError
	if !errors.As(err, &fe) || fe.Path != "sops.age" || !strings.Contains(fe.Msg, "65 entries, more than 64") {
		t.Fatalf("Decrypt of a file with 65 sops.age entries: %v, want a FormatError at sops.age", err)
	}
	if _, err := sops.Decrypt([]byte(strings.Replace(string(enc), one[1], strings.Repeat(one[1], 64), 1)), identities(t, "bob")); !errors.As(err, new(*sops.NoKeyError)) {
		t.Errorf("Decrypt of a file with 64 entries for another key: %v, want a NoKeyError", err)
	}
}
