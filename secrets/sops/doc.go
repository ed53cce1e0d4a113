// Package sops reads and writes SOPS-encrypted YAML files (Kubernetes Secret manifests) with
// age keys, compatible with the sops tool (https://github.com/getsops/sops, format of v3.13):
// a file that `sops --encrypt --age …` made decrypts here, and a file that Encrypt makes
// decrypts with `sops --decrypt`.
//
//	ids, err := sops.ParseIdentities(keyFile) // AGE-SECRET-KEY-1… lines, # comments
//	if err != nil {
//		return err
//	}
//	plain, err := sops.Decrypt(data, ids)
//	var noKey *sops.NoKeyError
//	switch {
//	case errors.As(err, &noKey): // encrypted for other keys: noKey.Recipients says whose
//	case errors.Is(err, sops.ErrMACMismatch): // changed after it was encrypted
//	case errors.Is(err, sops.ErrNotSOPS): // a plain file
//	}
//
//	enc, err := sops.Encrypt(secretYAML, []string{"age1…team", "age1…admin"})
//
// A Keyring holds one team's identities and remembers the data keys it unwrapped, for a
// renderer that decrypts the same files on every render:
//
//	alice := sops.NewKeyring(aliceIDs) // one per team, for as long as its keys stay
//	plain, err := alice.Decrypt(data)
//
// # The format
//
// Each leaf value that the file's rule encrypts is encrypted with AES-256-GCM under a random
// 32-byte data key, with a 32-byte IV and the value's key path as additional data
// ("stringData:HF_TOKEN:"), and written as ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]. The
// data key is encrypted to each age recipient as an armored age file, in sops.age[].enc. The
// MAC is SHA-512 over every value's text in file order (or the encrypted values only, with
// mac_only_encrypted), written as upper-case hex, encrypted like a value with
// sops.lastmodified as additional data, in sops.mac. The rule is one of
// unencrypted_suffix (the default, "_unencrypted"), encrypted_suffix, unencrypted_regex and
// encrypted_regex; Encrypt writes encrypted_regex '^(data|stringData)$' (SecretRegex), so a
// Secret's kind, name, namespace and labels stay readable and diffable in Git. Comments are
// kept where sops keeps them, and encrypted where their place is.
//
// A value is bound to its key path, so a value moved to another key or file does not
// decrypt; the MAC covers values, not keys, as in sops. Changing anything that sops checks
// fails with ErrMACMismatch.
//
// Not read: key groups with Shamir's secret sharing, the comment rules
// (encrypted_comment_regex, unencrypted_comment_regex), age plugins and SSH keys, and PGP,
// KMS and Vault keys (a file encrypted for those and for age decrypts with the age key).
//
// # Why not the getsops/sops library
//
// This package implements the format for age alone with filippo.io/age rather than import
// github.com/getsops/sops/v3: its root package imports its key service, which imports every
// key source (AWS, GCP, Huawei and Azure KMS, Vault, PGP) with their SDKs and gRPC. Measured
// on the reconciler (CGO_ENABLED=0 go build -trimpath ./cmd/gpuctl-reconciler, Go 1.26,
// sops v3.13.3's yaml store, aes cipher and age key source, the least a decrypt needs):
// modules linked 84 → 183, binary 58.9 MB → 142.3 MB, text 41.1 MB → 97.6 MB, RSS of
// `gpuctl-reconciler --help` 33.5 MB → 64.5 MB, against the daemon's bar of 150 MiB; a
// cold build's CPU time 3m18s → 5m25s. This package costs 0.4 MB of binary (58.9 → 59.4 MB)
// and nothing measurable in build time or RSS. The library's decrypt API also reads keys
// from the environment (SOPS_AGE_KEY_FILE), not from per-team identities given to it.
//
// Compatibility is checked by files that the sops binary made (testdata/, with the commands
// in testdata/README.md): they decrypt here byte for byte as `sops --decrypt` prints them, and
// what Encrypt writes has the layout of sops' output for the same input.
//
// Errors never hold a value of a file or key material: they name the line and key path
// (FormatError), the recipients (NoKeyError) or what changed (ErrMACMismatch). An Identity
// prints as its recipient. Decrypted values and data keys are never written to disk.
package sops
