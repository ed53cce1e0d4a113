package sops

import (
	"crypto/sha256"
	"sync"

	"filippo.io/age"
)

// maxCachedKeys bounds a Keyring's cache: past it, the cache starts again empty. A data key
// and its digest take about 150 bytes: 10,000 of them 1.5 MB.
const maxCachedKeys = 10_000

// Keyring decrypts SOPS files with a fixed set of age identities: one team's keys. It
// remembers, in memory only, each data key it unwraps, keyed by the SHA-256 of the armored
// age file it came from (a file's sops.age[].enc), so that decrypting a file again, or
// another file with the same data key, costs no X25519 exchange. That changes no result:
// the identities never change, and an age file decrypts to the same key every time, so a
// file decrypts from the cache exactly when it decrypts with the identities. Keep one
// Keyring per team and key version, never one for several teams' keys together; drop it
// when the keys change (a rotated-out key's data keys go with it).
//
// A Keyring is safe for concurrent use.
type Keyring struct {
	ids []age.Identity
	// recipients are the recipients of ids, "" for an identity of a type this package
	// does not know.
	recipients []string

	mu   sync.Mutex
	keys map[[sha256.Size]byte][]byte // nil for no cache
}

// NewKeyring returns a Keyring of identities (ParseIdentities' or age's own).
func NewKeyring(identities []age.Identity) *Keyring {
	k := newKeyring(identities)
	k.keys = make(map[[sha256.Size]byte][]byte)
	return k
}

// newKeyring is a Keyring without a cache.
func newKeyring(identities []age.Identity) *Keyring {
	k := &Keyring{ids: append([]age.Identity(nil), identities...), recipients: make([]string, len(identities))}
	for i, id := range identities {
		k.recipients[i] = recipientOf(id)
	}
	return k
}

// Recipients are the public keys of the keyring's identities ("" for an identity of a type
// this package does not know): whom a file must be encrypted for to decrypt here.
func (k *Keyring) Recipients() []string {
	return append([]string(nil), k.recipients...)
}

// Decrypt is the package's Decrypt with the keyring's identities and cache.
func (k *Keyring) Decrypt(data []byte) ([]byte, error) {
	docs, md, err := load(data)
	if err != nil {
		return nil, err
	}
	key, err := k.dataKey(md)
	if err != nil {
		return nil, err
	}
	defer clear(key)
	if err := decryptDocuments(docs, md, key); err != nil {
		return nil, err
	}
	return emitDocuments(docs)
}

// cached is a copy of the data key unwrapped from enc, or nil.
func (k *Keyring) cached(enc string) []byte {
	if k.keys == nil {
		return nil
	}
	d := sha256.Sum256([]byte(enc))
	k.mu.Lock()
	defer k.mu.Unlock()
	if key, ok := k.keys[d]; ok {
		return append([]byte(nil), key...)
	}
	return nil
}

// remember keeps a copy of the data key unwrapped from enc.
func (k *Keyring) remember(enc string, key []byte) {
	if k.keys == nil {
		return
	}
	d := sha256.Sum256([]byte(enc))
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.keys) >= maxCachedKeys {
		for _, v := range k.keys {
			clear(v)
		}
		clear(k.keys)
	}
	k.keys[d] = append([]byte(nil), key...)
}
