package sops_test

import (
	"fmt"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/gpuctl/gpuctl/secrets/sops"
)

// TestParseIdentities reads age-keygen's files (comments, blank lines, CRLF, several keys)
// and knows each key's recipient.
func TestParseIdentities(t *testing.T) {
	alice := string(readFile(t, "test-only-alice.agekey"))
	admin := string(readFile(t, "test-only-admin.agekey"))
	both := strings.ReplaceAll(alice+"\n\n"+admin, "\n", "\r\n")
	ids, err := sops.ParseIdentities([]byte(both))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 {
		t.Fatalf("%d identities, want 2", len(ids))
	}
	for i, want := range []string{aliceRecipient, adminRecipient} {
		id, ok := ids[i].(*sops.Identity)
		if !ok || id.Recipient() != want {
			t.Errorf("identity %d: %v, want one for %s", i, ids[i], want)
		}
	}
	// The two keys decrypt a file encrypted for either.
	if _, err := sops.Decrypt(readFile(t, "secret.sops.yaml"), ids[1:]); err != nil {
		t.Errorf("admin's key: %v", err)
	}
}

// TestIdentityNeverPrintsTheKey: an Identity printed by mistake (a log line, an error) shows
// its recipient, never the private key.
func TestIdentityNeverPrintsTheKey(t *testing.T) {
	ids := identities(t, "alice")
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{ids, ids[0]} {
			s := fmt.Sprintf(format, v)
			if strings.Contains(s, "AGE-SECRET-KEY") || !strings.Contains(s, aliceRecipient) {
				t.Errorf("Sprintf(%q) = %s, want the recipient and no key", format, s)
			}
		}
	}
}

// TestParseIdentitiesErrors: a bad line is named by its number, never quoted.
func TestParseIdentitiesErrors(t *testing.T) {
	key := lastLine(string(readFile(t, "test-only-alice.agekey")))
	cases := map[string]struct{ file, want string }{
		"empty":          {"", "no AGE-SECRET-KEY-1… line"},
		"comments only":  {"# created: now\n# public key: age1x\n", "no AGE-SECRET-KEY-1… line"},
		"a broken key":   {"# c\n" + key[:len(key)-3] + "xyz\n", "line 2: a malformed AGE-SECRET-KEY-1… key"},
		"a recipient":    {aliceRecipient + "\n", "line 1: not an age identity"},
		"a plugin":       {"AGE-PLUGIN-YUBIKEY-1QWERTY\n", "line 1: an age plugin identity"},
		"a broken pq":    {"AGE-SECRET-KEY-PQ-1" + key[16:] + "\n", "line 1: a malformed AGE-SECRET-KEY-PQ-1… key"},
		"two on a line":  {key + " " + key + "\n", "line 1: a malformed AGE-SECRET-KEY-1… key"},
		"a key and junk": {key + "\nhf_FAKEtokenFAKEtokenFAKE0123\n", "line 2: not an age identity"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := sops.ParseIdentities([]byte(c.file))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to say %q", err, c.want)
			}
			if strings.Contains(err.Error(), key[16:30]) || strings.Contains(err.Error(), "hf_FAKE") {
				t.Errorf("the error quotes the file: %v", err)
			}
		})
	}
}

// TestHybridKeys: age's post-quantum keys (age-keygen -pq) encrypt and decrypt, as with sops.
func TestHybridKeys(t *testing.T) {
	id, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	recipient := id.Recipient().String()
	enc, err := sops.Encrypt(readFile(t, "secret.yaml"), []string{recipient})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := sops.ParseIdentities([]byte(id.String() + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids[0].(*sops.Identity).Recipient(); got != recipient {
		t.Errorf("Recipient = %s, want %s", got, recipient)
	}
	got, err := sops.Decrypt(enc, ids)
	if err != nil {
		t.Fatal(err)
	}
	sameYAML(t, got, readFile(t, "secret.yaml"))
}

// TestDecryptWithPlainAgeIdentities: identities parsed by age itself work too, those of an
// unknown type by trying every entry.
func TestDecryptWithPlainAgeIdentities(t *testing.T) {
	key := lastLine(string(readFile(t, "test-only-admin.agekey")))
	x, err := age.ParseX25519Identity(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, ids := range map[string][]age.Identity{
		"*age.X25519Identity":  {x},
		"an unknown type":      {wrapped{x}},
		"with a wrong one too": {identities(t, "bob")[0], wrapped{x}},
	} {
		if _, err := sops.Decrypt(readFile(t, "secret.sops.yaml"), ids); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// wrapped is an age.Identity of a type sops does not know.
type wrapped struct{ age.Identity }
