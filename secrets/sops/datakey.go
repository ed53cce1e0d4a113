package sops

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// A file's data key is encrypted to each of its recipients as an armored age file (one
// recipient stanza each), in sops.age[].enc.

// dataKey decrypts the file's data key with one of the keyring's identities, or finds it in
// the keyring's cache. It first tries each entry with the identities whose recipient it
// names, one X25519 exchange where the team's key is among the recipients, then every other
// pair (an identity of an unknown type, a recipient spelled otherwise), so that a file that
// any identity opens opens. The key it returns is the caller's to clear.
func (k *Keyring) dataKey(md *metadata) ([]byte, error) {
	for _, e := range md.age {
		if key := k.cached(e.enc); key != nil {
			return key, nil
		}
	}
	var damaged error
	for _, matching := range []bool{true, false} {
		for _, e := range md.age {
			for i, id := range k.ids {
				if (k.recipients[i] == e.recipient) != matching {
					continue
				}
				key, err := unwrapDataKey(e.enc, id)
				var noMatch *age.NoIdentityMatchError
				if err != nil && matching && !errors.As(err, &noMatch) && damaged == nil {
					// The entry for this very key is broken, not "another key's": say so
					// rather than that no key fits. Age's errors say where, never a key.
					damaged = formatErr(e.line, []string{metadataKey, "age"}, "the data key for %s does not decrypt: %v", e.recipient, err)
				}
				if key != nil {
					if len(key) != dataKeySize {
						return nil, formatErr(e.line, []string{metadataKey, "age"}, "the data key for %s has %d bytes, not %d", e.recipient, len(key), dataKeySize)
					}
					k.remember(e.enc, key)
					return key, nil
				}
			}
		}
	}
	if damaged != nil {
		return nil, damaged
	}
	return nil, &NoKeyError{Recipients: md.recipients()}
}

// unwrapDataKey decrypts one armored age file with id.
func unwrapDataKey(enc string, id age.Identity) ([]byte, error) {
	r, err := age.Decrypt(armor.NewReader(strings.NewReader(enc)), id)
	if err != nil {
		return nil, err
	}
	key, err := io.ReadAll(r)
	if err != nil {
		clear(key)
		return nil, err
	}
	return key, nil
}

// wrapDataKey encrypts the data key to one recipient as an armored age file, as sops does.
func wrapDataKey(key []byte, r age.Recipient) (string, error) {
	var b bytes.Buffer
	aw := armor.NewWriter(&b)
	w, err := age.Encrypt(aw, r)
	if err != nil {
		return "", err
	}
	if _, err := w.Write(key); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := aw.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}
