package sops

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A value of a SOPS file is encrypted with AES-256-GCM under the file's 32-byte data key,
// with a random 32-byte IV and the value's key path as additional data ("stringData:HF_TOKEN:"),
// and written as
//
//	ENC[AES256_GCM,data:<base64>,iv:<base64>,tag:<base64>,type:<str|int|float|bool|time|comment>]
//
// The empty string stays the empty string (sops encrypts nothing there).

const (
	// dataKeySize is the size of a file's data key: AES-256.
	dataKeySize = 32
	// ivSize is the size of the IV that sops uses for AES-GCM (not GCM's usual 12).
	ivSize = 32
	// encPrefix starts every encrypted value.
	encPrefix = "ENC[AES256_GCM,data:"
)

var (
	// errNotEncrypted is a value that is not an ENC[AES256_GCM,...] string.
	errNotEncrypted = errors.New("not an ENC[AES256_GCM,...] value")
	// errNoDecrypt is a value that does not decrypt with the key at its path.
	errNoDecrypt = errors.New("does not decrypt with the file's data key at its path")
	// errBadType is a decrypted value that is not of its recorded type.
	errBadType = errors.New("the decrypted value does not match its recorded type")
)

// valueCipher encrypts and decrypts the values of one file under its data key.
type valueCipher struct {
	block cipher.Block
	gcm   cipher.AEAD // for ivSize-byte IVs
}

// newValueCipher makes the cipher of a data key.
func newValueCipher(key []byte) (*valueCipher, error) {
	if len(key) != dataKeySize {
		return nil, fmt.Errorf("the data key has %d bytes, want %d", len(key), dataKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, ivSize)
	if err != nil {
		return nil, err
	}
	return &valueCipher{block: block, gcm: gcm}, nil
}

// encrypt encrypts a leaf with additional data ad. The empty string and an empty comment
// stay empty.
func (c *valueCipher) encrypt(v any, ad string) (string, error) {
	var plain []byte
	var typ string
	switch v := v.(type) {
	case string:
		if v == "" {
			return "", nil
		}
		plain, typ = []byte(v), "str"
	case comment:
		if v.text == "" {
			return "", nil
		}
		plain, typ = []byte(v.text), "comment"
	case int:
		plain, typ = []byte(strconv.Itoa(v)), "int"
	case float64:
		plain, typ = []byte(strconv.FormatFloat(v, 'f', -1, 64)), "float"
	case bool:
		plain, typ = boolBytes(v), "bool"
	case time.Time:
		b, err := v.MarshalText()
		if err != nil {
			return "", errors.New("a time that cannot be written")
		}
		plain, typ = b, "time"
	default:
		return "", fmt.Errorf("a %T value, which SOPS does not encrypt", v)
	}
	iv := make([]byte, ivSize)
	if _, err := rand.Read(iv); err != nil {
		return "", err
	}
	sealed := c.gcm.Seal(nil, iv, plain, []byte(ad))
	tagAt := len(sealed) - c.gcm.Overhead()
	enc := base64.StdEncoding
	return encPrefix + enc.EncodeToString(sealed[:tagAt]) +
		",iv:" + enc.EncodeToString(iv) +
		",tag:" + enc.EncodeToString(sealed[tagAt:]) +
		",type:" + typ + "]", nil
}

// decrypt decrypts an ENC[...] value with additional data ad into a leaf of its recorded
// type. The empty string stays the empty string. Its errors never quote the value.
func (c *valueCipher) decrypt(s, ad string) (any, error) {
	if s == "" {
		return "", nil
	}
	data, iv, tag, typ, ok := parseEncrypted(s)
	if !ok {
		return nil, errNotEncrypted
	}
	gcm := c.gcm
	if len(iv) != ivSize {
		var err error
		if gcm, err = cipher.NewGCMWithNonceSize(c.block, len(iv)); err != nil {
			return nil, errNoDecrypt
		}
	}
	if len(tag) != gcm.Overhead() {
		return nil, errNoDecrypt
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(ad))
	if err != nil {
		return nil, errNoDecrypt
	}
	return typed(plain, typ)
}

// typed converts decrypted bytes to a leaf of type typ.
func typed(plain []byte, typ string) (any, error) {
	s := string(plain)
	switch typ {
	case "str", "bytes":
		return s, nil
	case "comment":
		return comment{text: s}, nil
	case "int":
		if n, err := strconv.Atoi(s); err == nil {
			return n, nil
		}
	case "float":
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
	case "bool":
		if b, err := strconv.ParseBool(s); err == nil {
			return b, nil
		}
	case "time":
		var t time.Time
		if t.UnmarshalText(plain) == nil {
			return t, nil
		}
	default:
		return nil, errors.New("an unknown value type (sops writes str, int, float, bool, time, comment)")
	}
	return nil, errBadType
}

// parseEncrypted splits ENC[AES256_GCM,data:D,iv:I,tag:T,type:Y] into its decoded parts.
func parseEncrypted(s string) (data, iv, tag []byte, typ string, ok bool) {
	rest, found := strings.CutPrefix(s, encPrefix)
	if !found {
		return nil, nil, nil, "", false
	}
	rest, found = strings.CutSuffix(rest, "]")
	if !found {
		return nil, nil, nil, "", false
	}
	d, rest, ok1 := strings.Cut(rest, ",iv:")
	i, rest, ok2 := strings.Cut(rest, ",tag:")
	t, y, ok3 := strings.Cut(rest, ",type:")
	if !ok1 || !ok2 || !ok3 || y == "" {
		return nil, nil, nil, "", false
	}
	enc := base64.StdEncoding
	var err1, err2, err3 error
	data, err1 = enc.DecodeString(d)
	iv, err2 = enc.DecodeString(i)
	tag, err3 = enc.DecodeString(t)
	if err1 != nil || err2 != nil || err3 != nil || len(iv) == 0 {
		return nil, nil, nil, "", false
	}
	return data, iv, tag, y, true
}

// boolBytes is how sops writes a bool for the MAC and for encryption: "True" or "False".
func boolBytes(b bool) []byte {
	if b {
		return []byte("True")
	}
	return []byte("False")
}

// leafBytes is what a leaf adds to the MAC: its text as sops writes it.
func leafBytes(v any) []byte {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case int:
		return []byte(strconv.Itoa(v))
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64))
	case bool:
		return boolBytes(v)
	case time.Time:
		b, _ := v.MarshalText()
		return b
	}
	return nil
}
