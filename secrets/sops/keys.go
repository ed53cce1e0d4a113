package sops

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"

	"filippo.io/age"
)

// The key types this package reads: age's X25519 keys (age-keygen's) and its post-quantum
// hybrid keys (age-keygen -pq). Age plugins and SSH keys, which sops also takes, are not read.
const (
	x25519IdentityPrefix = "AGE-SECRET-KEY-1"
	hybridIdentityPrefix = "AGE-SECRET-KEY-PQ-1"
	recipientPrefix      = "age1"
	hybridPrefix         = "age1pq1"
)

// Identity is an age identity (a private key) with its recipient (its public key), as
// ParseIdentities returns it. Knowing the recipient lets Decrypt unwrap only the file's data
// key that is encrypted for it, one X25519 exchange per file. It prints as its recipient,
// never as the key.
type Identity struct {
	id        age.Identity
	recipient string
}

// Unwrap decrypts a file key of an age header (age.Identity).
func (i *Identity) Unwrap(stanzas []*age.Stanza) ([]byte, error) { return i.id.Unwrap(stanzas) }

// Recipient is the identity's public key, "age1…".
func (i *Identity) Recipient() string { return i.recipient }

// String is "age identity for age1…": never the private key.
func (i *Identity) String() string { return "age identity for " + i.recipient }

// GoString is String, so that %#v does not print the key either.
func (i *Identity) GoString() string { return i.String() }

// ParseIdentities reads an age identity file: one AGE-SECRET-KEY-1… (or AGE-SECRET-KEY-PQ-1…)
// a line, blank lines and lines starting with # ignored, as age-keygen writes it and sops
// reads SOPS_AGE_KEY_FILE. Its errors name the line, never its text.
func ParseIdentities(data []byte) ([]age.Identity, error) {
	var ids []age.Identity
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, err := parseIdentity(line)
		if err != nil {
			return nil, fmt.Errorf("age identities: line %d: %w", n, err)
		}
		ids = append(ids, id)
	}
	if sc.Err() != nil {
		return nil, fmt.Errorf("age identities: %w", sc.Err())
	}
	if len(ids) == 0 {
		return nil, errors.New("age identities: no AGE-SECRET-KEY-1… line")
	}
	return ids, nil
}

// parseIdentity reads one identity. Its errors never quote s.
func parseIdentity(s string) (*Identity, error) {
	switch {
	case strings.HasPrefix(s, hybridIdentityPrefix):
		id, err := age.ParseHybridIdentity(s)
		if err != nil {
			return nil, errors.New("a malformed AGE-SECRET-KEY-PQ-1… key")
		}
		return &Identity{id: id, recipient: id.Recipient().String()}, nil
	case strings.HasPrefix(s, x25519IdentityPrefix):
		id, err := age.ParseX25519Identity(s)
		if err != nil {
			return nil, errors.New("a malformed AGE-SECRET-KEY-1… key")
		}
		return &Identity{id: id, recipient: id.Recipient().String()}, nil
	case strings.HasPrefix(s, "AGE-PLUGIN-"):
		return nil, errors.New("an age plugin identity, which gpuctl does not read")
	}
	return nil, errors.New("not an age identity (AGE-SECRET-KEY-1…)")
}

// ParseRecipients reads age recipients: "age1…" (X25519, as age-keygen prints them) or
// "age1pq1…" (post-quantum hybrid). An error names the recipient, or only its position where
// it does not look like one (it could be a private key pasted in the wrong place).
func ParseRecipients(recipients []string) ([]age.Recipient, error) {
	if len(recipients) == 0 {
		return nil, errors.New("no age recipient")
	}
	out := make([]age.Recipient, 0, len(recipients))
	for i, s := range recipients {
		r, err := parseRecipient(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("age recipient %d: %w", i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// parseRecipient reads one recipient.
func parseRecipient(s string) (age.Recipient, error) {
	switch {
	case strings.HasPrefix(s, hybridPrefix):
		r, err := age.ParseHybridRecipient(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a valid age1pq1… recipient", s)
		}
		return r, nil
	case strings.HasPrefix(s, recipientPrefix) && strings.Count(s, "1") > 1:
		return nil, fmt.Errorf("%q is an age plugin recipient, which gpuctl does not support", s)
	case strings.HasPrefix(s, recipientPrefix):
		r, err := age.ParseX25519Recipient(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a valid age1… recipient", s)
		}
		return r, nil
	case strings.HasPrefix(s, "ssh-"):
		return nil, errors.New("an SSH key, which gpuctl does not support as a recipient: use an age1… key")
	}
	return nil, errors.New("not an age recipient (age1…)")
}

// recipientOf is the recipient of an identity, or "" for one of a type this package does
// not know.
func recipientOf(id age.Identity) string {
	switch id := id.(type) {
	case *Identity:
		return id.recipient
	case *age.X25519Identity:
		return id.Recipient().String()
	case *age.HybridIdentity:
		return id.Recipient().String()
	}
	return ""
}
