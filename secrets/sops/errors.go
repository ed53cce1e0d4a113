package sops

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotSOPS is the error of Decrypt for a file without SOPS metadata: no document has a
// top-level sops: mapping.
var ErrNotSOPS = errors.New("not a SOPS file: it has no top-level sops: key")

// ErrMACMismatch is the error of Decrypt for a file that was changed after it was encrypted:
// its MAC (an encrypted SHA-512 over the file's values) does not match them, or a value does
// not decrypt with the file's data key at its path (it was edited, or moved from another key
// or file). The errors of Decrypt wrap it with the key and line where they know them.
var ErrMACMismatch = errors.New("MAC mismatch: the file was changed after it was encrypted")

// NoKeyError is the error of Decrypt when none of the identities it was given decrypts the
// file's data key. Recipients lists the age recipients (public keys) the file is encrypted
// for, so that the message says whose key would open it.
type NoKeyError struct {
	// Recipients are the age recipients of the file's sops.age entries, in file order.
	Recipients []string
}

// Error says that no key of the team decrypts the file and for whom it is encrypted.
func (e *NoKeyError) Error() string {
	if len(e.Recipients) == 0 {
		return "no key of this team can decrypt it (it is encrypted for no age recipient)"
	}
	return "no key of this team can decrypt it (encrypted for " + strings.Join(e.Recipients, ", ") + ")"
}

// FormatError is a problem of a file's YAML or of its SOPS metadata, at a line (0 where
// unknown) and a key path ("stringData.HF_TOKEN", "sops.mac"; "" for the whole document).
// Its message never holds a value of the file.
type FormatError struct {
	Line int
	Path string
	Msg  string
	// Err is the error underneath, when it is one of this package's (ErrMACMismatch); nil
	// otherwise, since others may quote the value they failed on.
	Err error
}

// Error says where the problem is and what it is: "line 14: stringData.HF_TOKEN: ...".
func (e *FormatError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the error underneath, for errors.Is(err, ErrMACMismatch).
func (e *FormatError) Unwrap() error { return e.Err }

// formatErr builds a *FormatError at line and path.
func formatErr(line int, path []string, format string, args ...any) *FormatError {
	return &FormatError{Line: line, Path: strings.Join(path, "."), Msg: fmt.Sprintf(format, args...)}
}

// tampered is ErrMACMismatch at line and path, with why.
func tampered(line int, path []string, why string) *FormatError {
	return &FormatError{Line: line, Path: strings.Join(path, "."), Msg: ErrMACMismatch.Error() + " (" + why + ")", Err: ErrMACMismatch}
}
