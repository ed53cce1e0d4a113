package sops_test

import (
	"fmt"
	"testing"

	"github.com/gpuctl/gpuctl/secrets/sops"
)

// BenchmarkDecrypt1000Secrets decrypts 1,000 small Secrets, one a file as a team commits
// them, each encrypted for the team's key and the admin's, with the team's key: one op is
// all 1,000 (issue 33's bar: a render that decrypts 1,000 encrypted Secrets takes at most
// 0.5 s more than one without them).
func BenchmarkDecrypt1000Secrets(b *testing.B) {
	files := make([][]byte, 1000)
	for i := range files {
		plain := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: job-%d-credentials
  namespace: alice
type: Opaque
stringData:
  HF_TOKEN: hf_FAKE%024d
  WANDB_API_KEY: wandb-FAKE-%016d
`, i, i, i)
		enc, err := sops.Encrypt([]byte(plain), []string{adminRecipient, aliceRecipient})
		if err != nil {
			b.Fatal(err)
		}
		files[i] = enc
	}
	ids := identities(b, "alice")
	decryptAll := func(b *testing.B, decrypt func([]byte) ([]byte, error)) {
		for _, f := range files {
			if _, err := decrypt(f); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Every file's data key unwrapped: a restart's first render.
	b.Run("Decrypt", func(b *testing.B) {
		for b.Loop() {
			decryptAll(b, func(f []byte) ([]byte, error) { return sops.Decrypt(f, ids) })
		}
	})
	// The same files again with the team's Keyring: a later render's, from its cache.
	b.Run("Keyring-again", func(b *testing.B) {
		k := sops.NewKeyring(ids)
		decryptAll(b, k.Decrypt)
		b.ResetTimer()
		for b.Loop() {
			decryptAll(b, k.Decrypt)
		}
	})
}
