package render

import (
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Diagnostics never quote the content of a file that is not a gpuctl document: a file below a
// team directory, a kustomization or a misplaced .gpuctl.yaml may hold a token or a key. The
// helpers here describe such content by its shape and drop what parsers quote of it.

// shapeOf describes a YAML node by its kind only, never by its text.
func shapeOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing (null)"
		}
		return "a single value"
	case yaml.AliasNode:
		return "an alias"
	}
	return "an unexpected YAML node"
}

// redactYAML removes what a YAML parser's message quotes of the source (anchor names, values,
// Go renderings of keys) and keeps the description of the problem.
func redactYAML(msg string) string {
	if strings.HasPrefix(msg, "invalid map key") {
		return "invalid map key (keys must be plain names)"
	}
	return redactMessage(msg)
}

// maxMessage bounds a message taken from another library.
const maxMessage = 400

// redactMessage removes from a message of another library (go-yaml, kustomize) everything it
// may have copied from a file: quoted or back-quoted text, bracketed or braced dumps of
// objects and bytes, and every line after the first; what is left is bounded in length.
func redactMessage(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	var b strings.Builder
	closing := map[rune]rune{'\'': '\'', '"': '"', '`': '`', '[': ']', '{': '}'}
	var stack []rune
	prev := ' '
	for _, r := range msg {
		before := prev
		prev = r
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			switch {
			case r == top:
				stack = stack[:len(stack)-1]
			case top != '\'' && top != '"' && top != '`' && closing[r] != 0:
				stack = append(stack, closing[r])
			}
			continue
		}
		if c, ok := closing[r]; ok && (r != '\'' || !unicode.IsLetter(before)) { // not the ' of "can't"
			stack = append(stack, c)
			b.WriteString("…")
			continue
		}
		b.WriteRune(r)
	}
	out := strings.TrimSpace(b.String())
	if len(out) > maxMessage {
		out = strings.ToValidUTF8(out[:maxMessage], "") + "…"
	}
	return out
}
