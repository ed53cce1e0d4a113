package sops_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/gpuctl/gpuctl/secrets/sops"
)

// A team's Secret, encrypted for its key and the admin's, decrypts with either, and with no
// other.
func Example() {
	secret := []byte(`apiVersion: v1
kind: Secret
metadata:
  name: hf
  namespace: alice
stringData:
  HF_TOKEN: hf_FAKE0123456789
`)
	enc, err := sops.Encrypt(secret, []string{
		"age1tvkft5ntwk4vc33hw8ldkeas6r8ckpltqh9czcxk5m5970lh5vxswa92qp", // team alice
		"age1jwl9qmps788lqmavuj9r79s98dddy6uaxt8q8n6s6mapfkvj9y4qq07swe", // admin
	})
	if err != nil {
		panic(err)
	}
	keyFile, err := os.ReadFile("testdata/test-only-alice.agekey")
	if err != nil {
		panic(err)
	}
	alice, err := sops.ParseIdentities(keyFile)
	if err != nil {
		panic(err)
	}
	plain, err := sops.Decrypt(enc, alice)
	if err != nil {
		panic(err)
	}
	fmt.Print(string(plain))

	bobKeyFile, err := os.ReadFile("testdata/test-only-bob.agekey")
	if err != nil {
		panic(err)
	}
	bob, err := sops.ParseIdentities(bobKeyFile)
	if err != nil {
		panic(err)
	}
	_, err = sops.Decrypt(enc, bob)
	var noKey *sops.NoKeyError
	fmt.Println(errors.As(err, &noKey), len(noKey.Recipients))
	// Output:
	// apiVersion: v1
	// kind: Secret
	// metadata:
	//     name: hf
	//     namespace: alice
	// stringData:
	//     HF_TOKEN: hf_FAKE0123456789
	// true 2
}
