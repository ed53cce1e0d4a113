package sops_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/secrets/sops"
)

var update = flag.Bool("update", false, "rewrite testdata/gpuctl-made.sops.yaml (then check it with sops by hand: testdata/README.md)")

// TestEncryptRoundTrip: what Encrypt writes decrypts with each recipient's key into what
// `sops --decrypt` prints for the same plaintext, and holds no value in clear.
func TestEncryptRoundTrip(t *testing.T) {
	for _, file := range []string{"secret", "multi", "types"} {
		t.Run(file, func(t *testing.T) {
			enc, err := sops.Encrypt(readFile(t, file+".yaml"), []string{aliceRecipient, adminRecipient})
			if err != nil {
				t.Fatal(err)
			}
			if !sops.IsEncrypted(enc) {
				t.Errorf("IsEncrypted = false for Encrypt's output")
			}
			assertNoSecret(t, "the encrypted file", string(enc))
			for _, who := range []string{"alice", "admin"} {
				got, err := sops.Decrypt(enc, identities(t, who))
				if err != nil {
					t.Fatalf("%s: %v", who, err)
				}
				want := readFile(t, file+".sops-decrypted.yaml")
				if file != "secret" {
					// sops made multi.sops.yaml with --mac-only-encrypted, and types.sops.yaml with
					// its default rule, which encrypts the inline comment that sops then writes
					// back on a line of its own: the data is the same.
					sameYAML(t, got, want)
				} else if !bytes.Equal(got, want) {
					t.Errorf("%s: differs from sops --decrypt:\n--- got\n%s\n--- sops\n%s", who, got, want)
				}
			}
			if _, err := sops.Decrypt(enc, identities(t, "bob")); !errors.As(err, new(*sops.NoKeyError)) {
				t.Errorf("bob: err = %v, want a *NoKeyError", err)
			}
		})
	}
}

// encryptedParts are the parts of an encrypted file that differ on every encryption.
var encryptedParts = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`ENC\[AES256_GCM,data:[^,]*,iv:[^,]*,tag:[^,]*,type:(\w+)\]`), "ENC[…,type:$1]"},
	{regexp.MustCompile(`(?m)^( +)[A-Za-z0-9+/=]{1,64}\n`), ""}, // armored age lines
	{regexp.MustCompile(`lastmodified: "[^"]*"`), `lastmodified: "…"`},
}

// normalized is an encrypted file without the parts that differ on every encryption.
func normalized(b []byte) string {
	s := string(b)
	for _, p := range encryptedParts {
		s = p.re.ReplaceAllString(s, p.with)
	}
	return s
}

// TestEncryptWritesWhatSopsWrites compares Encrypt's output with the file that
// `sops --encrypt --age alice,admin --encrypted-regex '^(data|stringData)$'` made from the
// same plaintext, all but ciphertexts and time: the same keys encrypted, the same types, the
// comments in the same places, the same metadata. (testdata/README.md records that sops
// decrypts a file Encrypt made: testdata/gpuctl-made.sops.yaml.)
func TestEncryptWritesWhatSopsWrites(t *testing.T) {
	enc, err := sops.Encrypt(readFile(t, "secret.yaml"), []string{aliceRecipient, adminRecipient})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := normalized(enc), normalized(readFile(t, "secret.sops.yaml")); got != want {
		t.Errorf("Encrypt's output differs from sops':\n--- got\n%s\n--- sops\n%s", got, want)
	}
	if *update {
		if err := os.WriteFile(filepath.Join("testdata", "gpuctl-made.sops.yaml"), enc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDecryptGpuctlMade decrypts the file that Encrypt once made and sops decrypted
// (testdata/README.md): the format Encrypt writes keeps decrypting.
func TestDecryptGpuctlMade(t *testing.T) {
	got, err := sops.Decrypt(readFile(t, "gpuctl-made.sops.yaml"), identities(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	if want := readFile(t, "secret.sops-decrypted.yaml"); !bytes.Equal(got, want) {
		t.Errorf("differs from sops --decrypt of the same plaintext:\n--- got\n%s\n--- want\n%s", got, want)
	}
}

// TestEncryptErrors: bad input fails with a clear error that holds no value of the file and
// no private key.
func TestEncryptErrors(t *testing.T) {
	plain := readFile(t, "secret.yaml")
	privateKey := strings.TrimSpace(lastLine(string(readFile(t, "test-only-alice.agekey"))))
	cases := map[string]struct {
		plain      []byte
		recipients []string
		want       string
	}{
		"no recipient":           {plain, nil, "no age recipient"},
		"a private key as one":   {plain, []string{aliceRecipient, privateKey}, "age recipient 2: not an age recipient (age1…)"},
		"a malformed recipient":  {plain, []string{"age1notbech32"}, `"age1notbech32" is not a valid age1… recipient`},
		"a plugin recipient":     {plain, []string{"age1yubikey1qwerty"}, "age plugin recipient"},
		"an ssh key":             {plain, []string{"ssh-ed25519 AAAA"}, "an SSH key"},
		"already encrypted":      {readFile(t, "secret.sops.yaml"), []string{aliceRecipient}, "already encrypted"},
		"not YAML":               {[]byte("stringData:\n  HF_TOKEN: [hf_FAKEtokenFAKEtokenFAKE0123\n"), []string{aliceRecipient}, "not valid YAML"},
		"empty":                  {nil, []string{aliceRecipient}, "no YAML document"},
		"a list":                 {[]byte("- hf_FAKEtokenFAKEtokenFAKE0123\n"), []string{aliceRecipient}, "the document is a sequence"},
		"a number key":           {[]byte("stringData:\n  1: hf_FAKEtokenFAKEtokenFAKE0123\n"), []string{aliceRecipient}, "line 2: stringData: the key 1 is not a string"},
		"a value of a bad tag":   {[]byte("stringData:\n  HF_TOKEN: !!int hf_FAKEtokenFAKEtokenFAKE0123\n"), []string{aliceRecipient}, "line 2: stringData.HF_TOKEN: a value that does not match its tag !!int"},
		"a number too large":     {[]byte("data:\n  N: 18446744073709551615\n"), []string{aliceRecipient}, "line 2: data.N: a uint64 value, which SOPS does not encrypt"},
		"a duplicated key":       {[]byte("stringData:\n  A: hf_FAKEtokenFAKEtokenFAKE0123\n  A: x\n"), []string{aliceRecipient}, "line 3: stringData.A: the key is defined twice (first on line 2)"},
		"the reserved key, deep": {[]byte("a: b\n---\nsops: hf_FAKEtokenFAKEtokenFAKE0123\n"), []string{aliceRecipient}, "already encrypted"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := sops.Encrypt(c.plain, c.recipients)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to say %q", err, c.want)
			}
			assertNoSecret(t, "the error", err.Error())
		})
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
