package sops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The tree holds a YAML file as sops' YAML store reads it, so that this package encrypts and
// decrypts the same leaves in the same order as sops, and writes what sops writes: a
// document is an ordered mapping; comments are items of their mapping or sequence, placed
// where sops places them; scalars are what yaml.v3 decodes into an interface (string, int,
// float64, bool, time.Time, nil). Writing it back indents by 4, as sops does.

// comment is one comment line of a file, without its '#'. Inline is true for a comment at the
// end of a value's line.
type comment struct {
	text   string
	inline bool
}

// entry is one item of a mapping: a key and its value, or a comment line (comment set).
type entry struct {
	key     string
	comment *comment
	value   any
	line    int
}

// mapping is a YAML mapping with its keys in file order.
type mapping []entry

// element is one item of a sequence: a value, or a comment (value of type comment).
type element struct {
	value any
	line  int
}

// sequence is a YAML sequence.
type sequence []element

// yamlIndent is the indentation that sops writes YAML with.
const yamlIndent = 4

// loadDocuments reads every document of a YAML file. A document must be a mapping (or empty).
func loadDocuments(data []byte) ([]mapping, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []mapping
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, &FormatError{Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		doc, err := appendNode(&n, nil, false, nil)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// appendComments appends the lines of a yaml.v3 comment ("# a\n# b") to m as comment items.
func appendComments(m mapping, text string, inline bool, line int) mapping {
	for _, l := range commentLines(text) {
		m = append(m, entry{comment: &comment{text: l, inline: inline}, line: line})
	}
	return m
}

// appendCommentElements appends the lines of a yaml.v3 comment to s as comment elements.
func appendCommentElements(s sequence, text string, inline bool, line int) sequence {
	for _, l := range commentLines(text) {
		s = append(s, element{value: comment{text: l, inline: inline}, line: line})
	}
	return s
}

// commentLines splits a yaml.v3 comment into its non-empty lines, each without its '#'.
func commentLines(text string) []string {
	if text == "" {
		return nil
	}
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if l != "" {
			lines = append(lines, l[1:])
		}
	}
	return lines
}

// appendNode appends the items of a document or mapping node to m. handled says that the
// caller already took the node's own comments.
func appendNode(n *yaml.Node, m mapping, handled bool, path []string) (mapping, error) {
	if m == nil {
		m = mapping{}
	}
	if !handled {
		m = appendComments(m, n.HeadComment, false, n.Line)
		m = appendComments(m, n.LineComment, false, n.Line)
	}
	var err error
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if m, err = appendNode(c, m, false, path); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, formatErr(n.Line, path, "the document is a sequence; SOPS encrypts mappings")
	case yaml.MappingNode:
		if m, err = appendPairs(n, m, path); err != nil {
			return nil, err
		}
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return m, nil
		}
		return nil, formatErr(n.Line, path, "the document is a single value; SOPS encrypts mappings")
	case yaml.AliasNode:
		if m, err = appendNode(n.Alias, m, false, path); err != nil {
			return nil, err
		}
	}
	if !handled {
		m = appendComments(m, n.FootComment, false, n.Line)
	}
	return m, nil
}

// appendPairs appends the key-value pairs of a mapping node, with their comments, to m.
func appendPairs(n *yaml.Node, m mapping, path []string) (mapping, error) {
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		m = appendComments(m, k.HeadComment, false, k.Line)
		m = appendComments(m, k.LineComment, false, k.Line)
		scalar := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
		if scalar {
			m = appendComments(m, v.HeadComment, false, v.Line)
			m = appendComments(m, v.LineComment, true, v.Line)
		}
		var key any
		if k.Kind != yaml.ScalarNode || k.Decode(&key) != nil {
			return nil, formatErr(k.Line, path, "a key that is not a string")
		}
		s, ok := key.(string)
		if !ok {
			return nil, formatErr(k.Line, path, "the key %s is not a string (quote it)", k.Value)
		}
		if first, dup := seen[s]; dup {
			return nil, formatErr(k.Line, append(path, s), "the key is defined twice (first on line %d)", first)
		}
		seen[s] = k.Line
		value, err := valueOf(v, scalar, append(path, s))
		if err != nil {
			return nil, err
		}
		m = append(m, entry{key: s, value: value, line: k.Line})
		if scalar {
			m = appendComments(m, v.FootComment, false, v.Line)
		}
		m = appendComments(m, k.FootComment, false, k.Line)
	}
	return m, nil
}

// valueOf reads a value node. handled says that the caller already took its comments.
func valueOf(n *yaml.Node, handled bool, path []string) (any, error) {
	switch n.Kind {
	case yaml.SequenceNode:
		var s sequence
		if !handled {
			s = appendCommentElements(s, n.HeadComment, false, n.Line)
			s = appendCommentElements(s, n.LineComment, false, n.Line)
		}
		for _, item := range n.Content {
			s = appendCommentElements(s, item.HeadComment, false, item.Line)
			s = appendCommentElements(s, item.LineComment, true, item.Line)
			v, err := valueOf(item, true, path)
			if err != nil {
				return nil, err
			}
			s = append(s, element{value: v, line: item.Line})
			s = appendCommentElements(s, item.FootComment, false, item.Line)
		}
		if !handled {
			s = appendCommentElements(s, n.FootComment, false, n.Line)
		}
		return s, nil
	case yaml.MappingNode:
		return appendNode(n, nil, handled, path)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			// yaml.v3's message quotes the value: say what is wrong without it.
			return nil, formatErr(n.Line, path, "a value that does not match its tag %s", n.Tag)
		}
		return v, nil
	case yaml.AliasNode:
		return valueOf(n.Alias, false, path)
	}
	return nil, nil
}

// emitDocuments writes documents as sops writes YAML: indented by 4, "---" between documents.
func emitDocuments(docs []mapping) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(yamlIndent)
	for _, d := range docs {
		m, err := mappingNode(d)
		if err != nil {
			return nil, err
		}
		if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}); err != nil {
			return nil, fmt.Errorf("writing YAML: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing YAML: %w", err)
	}
	return b.Bytes(), nil
}

// mappingNode builds the node of a mapping. Comments before the first key become the
// mapping's head comment, comments before a key its head comment, inline comments the line
// comment of the next value, and comments after the last key its foot comment.
func mappingNode(m mapping) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	var head, inline []string
	first := true
	for _, e := range m {
		if e.comment != nil {
			if e.comment.inline {
				inline = append(inline, e.comment.text)
			} else {
				head = append(head, e.comment.text)
			}
			continue
		}
		if first {
			addHead(n, head)
			head, first = nil, false
		}
		k, err := valueNode(e.key)
		if err != nil {
			return nil, err
		}
		addHead(k, head)
		v, err := valueNode(e.value)
		if err != nil {
			return nil, err
		}
		addAfter(&v.LineComment, inline)
		head, inline = nil, nil
		n.Content = append(n.Content, k, v)
	}
	head = append(head, inline...)
	if first {
		addHead(n, head)
	} else {
		addAfter(&n.Content[len(n.Content)-2].FootComment, head)
	}
	return n, nil
}

// sequenceNode builds the node of a sequence, its comments placed as mappingNode places them.
func sequenceNode(s sequence) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	var head, inline []string
	first := true
	for _, e := range s {
		if c, ok := e.value.(comment); ok {
			if c.inline {
				inline = append(inline, c.text)
			} else {
				head = append(head, c.text)
			}
			continue
		}
		if first {
			addHead(n, head)
			head, first = nil, false
		}
		v, err := valueNode(e.value)
		if err != nil {
			return nil, err
		}
		addHead(v, head)
		addAfter(&v.LineComment, inline)
		head, inline = nil, nil
		n.Content = append(n.Content, v)
	}
	head = append(head, inline...)
	if first {
		addHead(n, head)
	} else {
		addAfter(&n.Content[len(n.Content)-1].FootComment, head)
	}
	return n, nil
}

// valueNode builds the node of a value.
func valueNode(v any) (*yaml.Node, error) {
	switch v := v.(type) {
	case mapping:
		return mappingNode(v)
	case sequence:
		return sequenceNode(v)
	case string:
		if utf8.ValidString(v) {
			return stringNode(v), nil
		}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}, nil
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	// Floats, times and invalid UTF-8 (!!binary) are rare: yaml.v3 writes them, encoding
	// the value into a document and parsing it back, which costs too much for every string.
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("writing YAML: %w", err)
	}
	return n, nil
}

// stringNode is the node of a string, styled as yaml.v3 marshals a string (and as sops
// writes it): a literal block when it has several lines, double quotes when plain text
// would read as another type ("42", "true", "null", "yes", "1:20"), else plain (which the
// emitter quotes where plain text cannot hold it).
func stringNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n"):
		n.Style = yaml.LiteralStyle
	case (&yaml.Node{Kind: yaml.ScalarNode, Value: s}).ShortTag() != "!!str" || isBase60Float(s) || isOldBool(s):
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// base60float matches what YAML 1.1 reads as a sexagesimal float ("1:20"), which yaml.v3
// quotes (its own pattern).
var base60float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// isBase60Float says whether s would read as a sexagesimal float in YAML 1.1.
func isBase60Float(s string) bool {
	if s == "" || !(s[0] == '+' || s[0] == '-' || s[0] >= '0' && s[0] <= '9') || !strings.Contains(s, ":") {
		return false
	}
	return base60float.MatchString(s)
}

// isOldBool says whether s would read as a bool in YAML 1.1, which yaml.v3 quotes.
func isOldBool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}

// joinComments is the yaml.v3 text of comment lines: "#a\n#b".
func joinComments(lines []string) string {
	return "#" + strings.Join(lines, "\n#")
}

// addHead puts comment lines before the node's own head comment.
func addHead(n *yaml.Node, lines []string) {
	if len(lines) == 0 {
		return
	}
	if n.HeadComment != "" {
		n.HeadComment = joinComments(lines) + "\n" + n.HeadComment
	} else {
		n.HeadComment = joinComments(lines)
	}
}

// addAfter puts comment lines after a node's foot or line comment.
func addAfter(c *string, lines []string) {
	if len(lines) == 0 {
		return
	}
	if *c != "" {
		*c += "\n" + joinComments(lines)
	} else {
		*c = joinComments(lines)
	}
}

// leafFunc turns one leaf of a document into another: a scalar value or a comment, at the
// key path of the mapping that holds it (a sequence adds nothing to the path). It must not
// keep path.
type leafFunc func(v any, path []string, line int) (any, error)

// walkMapping calls f on every leaf below m, in file order, and puts back what it returns. A
// comment item of a mapping gets back a comment (what a decrypted comment is, losing
// "inline" as sops does) or a string (an encrypted comment, keeping it).
func walkMapping(m mapping, path []string, f leafFunc) error {
	for i := range m {
		e := &m[i]
		if e.comment != nil {
			out, err := f(*e.comment, path, e.line)
			if err != nil {
				return err
			}
			switch o := out.(type) {
			case comment:
				e.comment = &o
			case string:
				e.comment = &comment{text: o, inline: e.comment.inline}
			}
			continue
		}
		v, err := walkValue(e.value, append(path, e.key), e.line, f)
		if err != nil {
			return err
		}
		e.value = v
	}
	return nil
}

// walkValue calls f on v, or on every leaf below it.
func walkValue(v any, path []string, line int, f leafFunc) (any, error) {
	switch v := v.(type) {
	case mapping:
		return v, walkMapping(v, path, f)
	case sequence:
		for i := range v {
			out, err := walkValue(v[i].value, path, v[i].line, f)
			if err != nil {
				return nil, err
			}
			v[i].value = out
		}
		return v, nil
	case nil:
		return nil, nil
	case string, int, float64, bool, time.Time, comment:
		return f(v, path, line)
	}
	return nil, formatErr(line, path, "a %T value, which SOPS does not encrypt", v)
}
