package sops

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// metadataKey is the top-level key of a document that holds its SOPS metadata.
const metadataKey = "sops"

// formatVersion is the sops version whose format Encrypt writes, recorded in sops.version.
const formatVersion = "3.13.3"

// SecretRegex is the encrypted_regex of the files that Encrypt writes: only the values below
// data and stringData are encrypted, so a Secret's kind, name and labels stay readable.
const SecretRegex = "^(data|stringData)$"

// macOnlyEncryptedInit starts the MAC of a file with mac_only_encrypted: true (sops'
// constant, so that such a MAC never equals one over all values).
var macOnlyEncryptedInit = []byte{0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0xb, 0xb, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69}

// metadata is what this package reads of, and writes to, a file's sops: mapping.
type metadata struct {
	age []ageKey
	// others are the key types besides age that the file is encrypted for ("pgp", "kms").
	others []string
	// lastModified is the time of sops.lastmodified in RFC 3339, as the MAC's additional data.
	lastModified     string
	mac              string
	macLine          int
	macOnlyEncrypted bool
	rule             rule
	line             int
}

// ageKey is one entry of sops.age: the data key encrypted to a recipient, as an armored age file.
type ageKey struct {
	recipient string
	enc       string
	line      int
}

// The rules that choose which values sops encrypts; a file has at most one.
const (
	unencryptedSuffix = "unencrypted_suffix"
	encryptedSuffix   = "encrypted_suffix"
	unencryptedRegex  = "unencrypted_regex"
	encryptedRegex    = "encrypted_regex"
	// defaultUnencryptedSuffix is the rule of a file that names none.
	defaultUnencryptedSuffix = "_unencrypted"
)

// rule says which values of a file are encrypted, from one key of its metadata.
type rule struct {
	kind  string
	value string
	re    *regexp.Regexp
}

// encrypts says whether the value at path is encrypted: by sops' rules, a key of the path
// with the unencrypted suffix (or matching the unencrypted regex) leaves it in clear, a key
// with the encrypted suffix (or matching the encrypted regex) encrypts it.
func (r rule) encrypts(path []string) bool {
	switch r.kind {
	case unencryptedSuffix:
		return !slices.ContainsFunc(path, func(k string) bool { return strings.HasSuffix(k, r.value) })
	case encryptedSuffix:
		return slices.ContainsFunc(path, func(k string) bool { return strings.HasSuffix(k, r.value) })
	case unencryptedRegex:
		return !slices.ContainsFunc(path, r.re.MatchString)
	case encryptedRegex:
		return slices.ContainsFunc(path, r.re.MatchString)
	}
	return true
}

// ruleRegexps are the compiled regexps of the rules seen, at most maxRuleRegexps: every
// file of a repository has the same one or two.
var (
	ruleRegexpsMu sync.Mutex
	ruleRegexps   = map[string]*regexp.Regexp{SecretRegex: secretRule.re}
)

// maxRuleRegexps bounds ruleRegexps.
const maxRuleRegexps = 64

// compileRule compiles the regexp of a rule, once.
func compileRule(expr string) (*regexp.Regexp, error) {
	ruleRegexpsMu.Lock()
	defer ruleRegexpsMu.Unlock()
	if re, ok := ruleRegexps[expr]; ok {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	if len(ruleRegexps) < maxRuleRegexps {
		ruleRegexps[expr] = re
	}
	return re, nil
}

// otherKeyTypes are the keys of sops metadata that list data keys for other key services.
var otherKeyTypes = []string{"pgp", "kms", "gcp_kms", "azure_kv", "hc_vault", "hckms"}

// parseMetadata reads the value of a document's sops: key, at line.
func parseMetadata(v any, line int) (*metadata, error) {
	m, ok := v.(mapping)
	if !ok {
		return nil, formatErr(line, []string{metadataKey}, "not a mapping")
	}
	md := &metadata{line: line}
	var rules []rule
	for _, e := range m {
		if e.comment != nil {
			continue
		}
		path := []string{metadataKey, e.key}
		switch e.key {
		case "age":
			keys, err := parseAgeKeys(e.value, e.line)
			if err != nil {
				return nil, err
			}
			md.age = keys
		case "key_groups":
			return nil, formatErr(e.line, path, "key groups (Shamir's secret sharing) are not supported: encrypt the file for age recipients without --shamir-secret-sharing-threshold or key_groups")
		case "lastmodified":
			t, ok := e.value.(time.Time)
			if s, isString := e.value.(string); isString {
				var err error
				t, err = time.Parse(time.RFC3339, s)
				ok = err == nil
			}
			if !ok {
				return nil, formatErr(e.line, path, "not a time in RFC 3339")
			}
			md.lastModified = t.Format(time.RFC3339)
		case "mac":
			s, ok := e.value.(string)
			if !ok {
				return nil, formatErr(e.line, path, "not a string")
			}
			md.mac, md.macLine = s, e.line
		case "mac_only_encrypted":
			b, ok := e.value.(bool)
			if !ok {
				return nil, formatErr(e.line, path, "not true or false")
			}
			md.macOnlyEncrypted = b
		case unencryptedSuffix, encryptedSuffix, unencryptedRegex, encryptedRegex:
			s, ok := e.value.(string)
			if !ok {
				return nil, formatErr(e.line, path, "not a string")
			}
			if s == "" {
				continue
			}
			r := rule{kind: e.key, value: s}
			if strings.HasSuffix(e.key, "_regex") {
				re, err := compileRule(s)
				if err != nil {
					return nil, formatErr(e.line, path, "not a regular expression: %v", err)
				}
				r.re = re
			}
			rules = append(rules, r)
		case "unencrypted_comment_regex", "encrypted_comment_regex":
			if s, _ := e.value.(string); s != "" {
				return nil, formatErr(e.line, path, "not supported: encrypt the file with another rule (gpuctl writes encrypted_regex %s)", SecretRegex)
			}
		default:
			if slices.Contains(otherKeyTypes, e.key) {
				if s, ok := e.value.(sequence); ok && len(s) > 0 {
					md.others = append(md.others, e.key)
				}
			}
		}
	}
	switch len(rules) {
	case 0:
		md.rule = rule{kind: unencryptedSuffix, value: defaultUnencryptedSuffix}
	case 1:
		md.rule = rules[0]
	default:
		return nil, formatErr(line, []string{metadataKey}, "more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex")
	}
	if md.lastModified == "" {
		return nil, formatErr(line, []string{metadataKey}, "no lastmodified")
	}
	if md.mac == "" {
		return nil, tampered(line, []string{metadataKey}, "sops.mac is missing")
	}
	if len(md.age) == 0 {
		if len(md.others) > 0 {
			return nil, formatErr(line, []string{metadataKey}, "encrypted for no age recipient, only for %s: gpuctl decrypts with age keys", strings.Join(md.others, ", "))
		}
		return nil, formatErr(line, []string{metadataKey}, "encrypted for no age recipient")
	}
	return md, nil
}

// maxAgeKeys is the most sops.age entries a file may have: a file is encrypted for a team and
// its admin, a handful of keys. Each entry costs an X25519 exchange when no key opens the file
// (again at every render), and a file of 1 MiB holds ~1,800: a team could slow every render.
const maxAgeKeys = 64

// parseAgeKeys reads sops.age: a sequence of {recipient, enc}.
func parseAgeKeys(v any, line int) ([]ageKey, error) {
	s, ok := v.(sequence)
	if !ok {
		return nil, formatErr(line, []string{metadataKey, "age"}, "not a sequence")
	}
	if len(s) > maxAgeKeys {
		return nil, formatErr(line, []string{metadataKey, "age"}, "%d entries, more than %d: encrypt the file for fewer age recipients", len(s), maxAgeKeys)
	}
	var keys []ageKey
	for _, el := range s {
		if _, isComment := el.value.(comment); isComment {
			continue
		}
		m, ok := el.value.(mapping)
		if !ok {
			return nil, formatErr(el.line, []string{metadataKey, "age"}, "an entry that is not a mapping of recipient and enc")
		}
		k := ageKey{line: el.line}
		for _, e := range m {
			switch e.key {
			case "recipient":
				k.recipient, _ = e.value.(string)
			case "enc":
				k.enc, _ = e.value.(string)
			}
		}
		if k.recipient == "" || k.enc == "" {
			return nil, formatErr(el.line, []string{metadataKey, "age"}, "an entry without recipient or enc")
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// recipients lists the age recipients of the file.
func (md *metadata) recipients() []string {
	r := make([]string, len(md.age))
	for i, k := range md.age {
		r[i] = k.recipient
	}
	return r
}

// toMapping is the sops: mapping that sops writes for md, its keys in sops' (alphabetical) order.
func (md *metadata) toMapping() mapping {
	var age sequence
	for _, k := range md.age {
		age = append(age, element{value: mapping{{key: "enc", value: k.enc}, {key: "recipient", value: k.recipient}}})
	}
	m := mapping{
		{key: "age", value: age},
		{key: "lastmodified", value: md.lastModified},
		{key: "mac", value: md.mac},
		{key: "version", value: formatVersion},
		{key: md.rule.kind, value: md.rule.value},
	}
	if md.macOnlyEncrypted {
		m = append(m, entry{key: "mac_only_encrypted", value: true})
	}
	slices.SortFunc(m, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	return m
}
