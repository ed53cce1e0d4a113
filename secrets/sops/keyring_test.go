package sops_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"filippo.io/age"

	"github.com/gpuctl/gpuctl/secrets/sops"
)

// counting is an identity that counts its unwraps (X25519 exchanges).
type counting struct {
	age.Identity
	n *atomic.Int32
}

func (c counting) Unwrap(s []*age.Stanza) ([]byte, error) {
	c.n.Add(1)
	return c.Identity.Unwrap(s)
}

// TestKeyringRemembersDataKeys: a Keyring unwraps a file's data key once; decrypting the
// file again costs no exchange and still checks the MAC.
func TestKeyringRemembersDataKeys(t *testing.T) {
	var n atomic.Int32
	k := sops.NewKeyring([]age.Identity{counting{identities(t, "admin")[0], &n}})
	enc := readFile(t, "secret.sops.yaml")
	for i := range 3 {
		got, err := k.Decrypt(enc)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(readFile(t, "secret.sops-decrypted.yaml")) {
			t.Errorf("decryption %d differs", i+1)
		}
	}
	// The admin's entry is the second: the first unwrap tries the first (alice's) and fails.
	if got := n.Load(); got != 2 {
		t.Errorf("%d unwraps for 3 decryptions, want 2 (the first decryption's)", got)
	}
	tampered := strings.Replace(string(enc), "namespace: alice", "namespace: bob", 1)
	if _, err := k.Decrypt([]byte(tampered)); !errors.Is(err, sops.ErrMACMismatch) {
		t.Errorf("a tampered file with a remembered key: err = %v, want ErrMACMismatch", err)
	}
	if n.Load() != 2 {
		t.Errorf("the tampered file with the same data key unwrapped again")
	}
}

// TestKeyringsApart: what a team's Keyring remembers does not open files for another:
// bob's Keyring does not decrypt the file that alice's decrypted.
func TestKeyringsApart(t *testing.T) {
	enc := readFile(t, "secret.sops.yaml")
	alice, bob := sops.NewKeyring(identities(t, "alice")), sops.NewKeyring(identities(t, "bob"))
	if _, err := alice.Decrypt(enc); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Decrypt(enc); !errors.As(err, new(*sops.NoKeyError)) {
		t.Errorf("bob after alice: err = %v, want a *NoKeyError", err)
	}
	if got := alice.Recipients(); len(got) != 1 || got[0] != aliceRecipient {
		t.Errorf("Recipients = %v, want [%s]", got, aliceRecipient)
	}
}

// TestKeyringConcurrent decrypts from several goroutines at once (run with -race).
func TestKeyringConcurrent(t *testing.T) {
	k := sops.NewKeyring(identities(t, "alice"))
	files := [][]byte{readFile(t, "secret.sops.yaml"), readFile(t, "multi.sops.yaml"), readFile(t, "types.sops.yaml")}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := k.Decrypt(files[i%len(files)]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
