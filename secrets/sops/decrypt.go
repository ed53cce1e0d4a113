package sops

import (
	"bytes"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"

	"filippo.io/age"
	"go.yaml.in/yaml/v3"
)

// Decrypt decrypts a SOPS-encrypted YAML file with one of identities, verifies its MAC and
// returns the plaintext YAML, written as `sops --decrypt` writes it (indented by 4, comments
// kept, the sops: key removed). Every document of the file is decrypted; the metadata is the
// first document's, as in sops.
//
// Its errors never hold a value or key material: ErrNotSOPS for a file without SOPS metadata,
// a *NoKeyError (listing the file's recipients) when no identity decrypts the data key, an
// error wrapping ErrMACMismatch when the file was changed after it was encrypted, and a
// *FormatError (line and key path) for anything else malformed.
//
// Each call unwraps the data key with an X25519 exchange; a Keyring remembers the keys it
// unwrapped, for decrypting many files, or the same files again.
func Decrypt(data []byte, identities []age.Identity) ([]byte, error) {
	return newKeyring(identities).Decrypt(data)
}

// IsEncrypted says whether data is a SOPS-encrypted YAML file: its first document has a
// top-level sops: mapping with a mac. It does not check that the file decrypts.
func IsEncrypted(data []byte) bool {
	if !bytes.Contains(data, []byte(metadataKey)) {
		return false
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || len(doc.Content) != 1 {
		return false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == metadataKey && m.Content[i+1].Kind == yaml.MappingNode {
			md := m.Content[i+1]
			for j := 0; j+1 < len(md.Content); j += 2 {
				if md.Content[j].Value == "mac" {
					return true
				}
			}
		}
	}
	return false
}

// Recipients lists the age recipients that an encrypted file is encrypted for, in file order:
// who can decrypt it. It decrypts nothing.
func Recipients(data []byte) ([]string, error) {
	_, md, err := load(data)
	if err != nil {
		return nil, err
	}
	return md.recipients(), nil
}

// load reads the documents of an encrypted file and the metadata of its first document,
// taking the sops: key out of every document.
func load(data []byte) ([]mapping, *metadata, error) {
	docs, err := loadDocuments(data)
	if err != nil {
		return nil, nil, err
	}
	var md *metadata
	for i, d := range docs {
		j := slices.IndexFunc(d, func(e entry) bool { return e.comment == nil && e.key == metadataKey })
		if j < 0 {
			continue
		}
		if i == 0 {
			if md, err = parseMetadata(d[j].value, d[j].line); err != nil {
				return nil, nil, err
			}
		}
		docs[i] = slices.Delete(d, j, j+1)
	}
	if md == nil {
		return nil, nil, ErrNotSOPS
	}
	return docs, md, nil
}

// decryptDocuments decrypts in place the values that the file's rule encrypts and checks the
// MAC over them.
func decryptDocuments(docs []mapping, md *metadata, key []byte) error {
	c, err := newValueCipher(key)
	if err != nil {
		return formatErr(md.line, []string{metadataKey, "age"}, "%v", err)
	}
	mac := newMAC(md.macOnlyEncrypted)
	leaf := func(v any, path []string, line int) (any, error) {
		encrypted := md.rule.encrypts(path)
		out := v
		if encrypted {
			ad := strings.Join(path, ":") + ":"
			switch v := v.(type) {
			case comment:
				// A comment that does not decrypt was written in clear after the file was
				// encrypted: sops keeps it as it is, and so does this.
				if d, err := c.decrypt(v.text, ad); err == nil {
					out = d
				}
			case string:
				if out, err = c.decrypt(v, ad); err != nil {
					return nil, valueError(line, path, err)
				}
			default:
				return nil, tampered(line, path, "a value in clear where the file encrypts values")
			}
		}
		if !md.macOnlyEncrypted || encrypted {
			if _, isComment := out.(comment); !isComment {
				mac.Write(leafBytes(out))
			}
		}
		return out, nil
	}
	for _, d := range docs {
		if err := walkMapping(d, nil, leaf); err != nil {
			return err
		}
	}
	stored, err := c.decrypt(md.mac, md.lastModified)
	s, ok := stored.(string)
	if err != nil || !ok {
		return tampered(md.macLine, []string{metadataKey, "mac"}, "sops.mac does not decrypt with sops.lastmodified")
	}
	if subtle.ConstantTimeCompare([]byte(s), []byte(macHex(mac))) != 1 {
		return tampered(md.macLine, []string{metadataKey, "mac"}, "the values do not match sops.mac")
	}
	return nil
}

// valueError says why a value did not decrypt, without the value.
func valueError(line int, path []string, err error) error {
	switch {
	case errors.Is(err, errNotEncrypted):
		return tampered(line, path, "a value in clear where the file encrypts values: encrypt the file again")
	case errors.Is(err, errNoDecrypt):
		return tampered(line, path, "the value does not decrypt at this key: it was changed, or moved from another key or file")
	}
	return tampered(line, path, err.Error())
}

// newMAC starts the MAC of a file: SHA-512 over its values as text, in file order.
func newMAC(onlyEncrypted bool) hash.Hash {
	h := sha512.New()
	if onlyEncrypted {
		h.Write(macOnlyEncryptedInit)
	}
	return h
}

// macHex is the MAC as sops writes it before encrypting it: upper-case hex.
func macHex(h hash.Hash) string {
	return fmt.Sprintf("%X", h.Sum(nil))
}
