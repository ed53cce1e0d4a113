package sops

import (
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"filippo.io/age"
)

// secretRule is the rule of the files that Encrypt writes.
var secretRule = rule{kind: encryptedRegex, value: SecretRegex, re: regexp.MustCompile(SecretRegex)}

// Encrypt encrypts a Kubernetes Secret manifest (YAML, one or more documents) for the age
// recipients ("age1…"), as
//
//	sops --encrypt --age R1,R2 --encrypted-regex '^(data|stringData)$' secret.yaml
//
// does: a new random data key, each value below data or stringData encrypted with it (the
// kind, name, namespace and labels stay readable and diffable in Git), a MAC over all values,
// and the data key encrypted to each recipient in sops.age. The output decrypts with sops and
// with Decrypt; it differs on every call (random IVs and data key). Comments are kept, those
// inside data and stringData encrypted, as sops does.
//
// Its errors never hold a value of the file.
func Encrypt(plaintext []byte, recipients []string) ([]byte, error) {
	rs, err := ParseRecipients(recipients)
	if err != nil {
		return nil, err
	}
	if len(rs) > maxAgeKeys {
		return nil, fmt.Errorf("%d age recipients, more than %d: a file that Decrypt refuses", len(rs), maxAgeKeys)
	}
	docs, err := loadDocuments(plaintext)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, errors.New("nothing to encrypt: the file has no YAML document")
	}
	for _, d := range docs {
		if i := slices.IndexFunc(d, func(e entry) bool { return e.comment == nil && e.key == metadataKey }); i >= 0 {
			return nil, formatErr(d[i].line, []string{metadataKey}, "the file is already encrypted (or uses the key sops, which SOPS reserves)")
		}
	}
	key := make([]byte, dataKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	defer clear(key)
	md := &metadata{rule: secretRule}
	if err := encryptDocuments(docs, md, key); err != nil {
		return nil, err
	}
	for i, r := range rs {
		enc, err := wrapDataKey(key, r)
		if err != nil {
			return nil, fmt.Errorf("encrypting the data key to age recipient %d: %w", i+1, err)
		}
		md.age = append(md.age, ageKey{recipient: recipientString(r, recipients[i]), enc: enc})
	}
	meta := md.toMapping()
	for i := range docs {
		docs[i] = append(docs[i], entry{key: metadataKey, value: meta})
	}
	return emitDocuments(docs)
}

// encryptDocuments encrypts in place the values that md's rule encrypts, and sets md's
// lastmodified and MAC.
func encryptDocuments(docs []mapping, md *metadata, key []byte) error {
	c, err := newValueCipher(key)
	if err != nil {
		return err
	}
	mac := newMAC(md.macOnlyEncrypted)
	leaf := func(v any, path []string, line int) (any, error) {
		encrypted := md.rule.encrypts(path)
		if _, isComment := v.(comment); !isComment && (!md.macOnlyEncrypted || encrypted) {
			mac.Write(leafBytes(v))
		}
		if !encrypted {
			return v, nil
		}
		s, err := c.encrypt(v, strings.Join(path, ":")+":")
		if err != nil {
			return nil, formatErr(line, path, "%v", err)
		}
		return s, nil
	}
	for _, d := range docs {
		if err := walkMapping(d, nil, leaf); err != nil {
			return err
		}
	}
	md.lastModified = time.Now().UTC().Format(time.RFC3339)
	md.mac, err = c.encrypt(macHex(mac), md.lastModified)
	return err
}

// recipientString is how a recipient is recorded in sops.age: its canonical form where the
// type gives one, else as it was given.
func recipientString(r age.Recipient, given string) string {
	if s, ok := r.(fmt.Stringer); ok {
		return s.String()
	}
	return strings.TrimSpace(given)
}
