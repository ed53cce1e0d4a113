package repopath

import (
	"fmt"
	"strings"
)

// Error is a path that a rule refuses, and why.
type Error struct {
	// Path is the path as given.
	Path string
	// Reason says which part of it is refused, and why.
	Reason string
}

// Error is `path "x": reason`.
func (e *Error) Error() string { return fmt.Sprintf("path %q: %s", e.Path, e.Reason) }

// Check refuses a path (slash-separated, relative to the repository's top or to a directory
// of it) that a write of gpuctl may not create or change. Only the files that render reads are
// written, so a path is refused when it is not a clean relative path (empty, absolute, an empty,
// . or .. segment, a backslash), when a segment starts with a dot (render skips dot directories
// and dot files: a file written there would be committed unchecked), when it holds a control
// character, and when Git refuses it (CheckTree: .git in any case and its NTFS and HFS+
// spellings, git~1).
func Check(p string) error {
	if err := CheckTree(p); err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(p, "/"):
		return &Error{Path: p, Reason: "must be relative to the repository"}
	case strings.Contains(p, `\`):
		return &Error{Path: p, Reason: "a backslash is not a separator here: write the path with /"}
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			return &Error{Path: p, Reason: "must be a clean path, without an empty segment (//, or a / at an end)"}
		case strings.HasPrefix(stripHFSIgnored(seg), "."):
			return &Error{Path: p, Reason: fmt.Sprintf("%q starts with a dot: gpuctl reads no dot directory or dot file, so it writes none", seg)}
		}
	}
	return nil
}

// CheckTree refuses a path of a Git tree that Git refuses to check out (upstream Git's
// verify_path with core.protectNTFS and core.protectHFS, as go-git checks a tree it checks
// out): an empty path, an empty, . or .. segment, a control character, and a segment that is
// .git to some filesystem: .git in any case, its NTFS short name git~1, either followed by
// dots, spaces or an NTFS stream (.git., "git~1 ", .git::$INDEX_ALLOCATION), or .git with
// code points that HFS+ ignores (.g\u200cit). A backslash separates segments too, as on
// Windows.
func CheckTree(p string) error {
	if p == "" {
		return &Error{Path: p, Reason: "empty"}
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return &Error{Path: p, Reason: fmt.Sprintf("holds the control character %q", p[i])}
		}
	}
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		switch {
		case seg == "." || seg == "..":
			return &Error{Path: p, Reason: fmt.Sprintf("a %q segment: must be a clean path inside the repository", seg)}
		case IsDotGit(seg):
			return &Error{Path: p, Reason: fmt.Sprintf("%q is .git to Git (or to NTFS or HFS+): Git refuses to check it out", seg)}
		}
	}
	return nil
}

// IsDotGit reports whether a path segment names the repository's .git on some filesystem:
// .git in any case, or git~1 (its NTFS short name), either followed by any dots and spaces
// (which NTFS drops) and an optional NTFS stream (:…); or .git with code points that HFS+
// ignores anywhere in it.
func IsDotGit(seg string) bool {
	s := strings.ToLower(seg)
	var rest string
	switch {
	case strings.HasPrefix(s, ".git"):
		rest = s[len(".git"):]
	case strings.HasPrefix(s, "git~1"):
		rest = s[len("git~1"):]
	default:
		return stripHFSIgnored(s) == ".git"
	}
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case ':':
			return true
		case '.', ' ':
		default:
			return false
		}
	}
	return true
}

// stripHFSIgnored is s without the code points that HFS+ ignores in a name (upstream Git's
// utf8.c next_hfs_char): zero-width joiners and marks, directional formatting, U+FEFF.
func stripHFSIgnored(s string) string {
	if !strings.ContainsFunc(s, hfsIgnored) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if hfsIgnored(r) {
			return -1
		}
		return r
	}, s)
}

// hfsIgnored reports whether HFS+ ignores r in a name.
func hfsIgnored(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}
