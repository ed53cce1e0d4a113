package edit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gpuctl/gpuctl/render"
	"go.yaml.in/yaml/v3"
)

// A file is edited as a person would edit it: yaml.v3's node tree only says where things are
// (line and column), and the change is a splice of bytes into the original text. Everything
// else — comments, key order, quoting, anchors, flow style, indentation, line endings — stays
// as written, byte for byte.

// text is one YAML file: its bytes, where its lines start, its documents as node trees and
// as byte ranges.
type text struct {
	path  string // as shown in messages
	data  []byte
	lines []int        // offset of the start of each line; lines[0] is line 1
	docs  []*yaml.Node // the documents, as render numbers them (Document.Index)
	segs  []segment
	// aliased are the anchors that an alias uses somewhere in the file.
	aliased map[string]int // anchor -> line of a use
}

// segment is the text between two document markers (---): the first one has no marker.
type segment struct {
	start, end int // byte range
	line       int // first line
	marker     bool
}

// splice replaces data[start:end] with text.
type splice struct {
	start, end int
	text       string
}

// parseText reads a YAML file for editing.
func parseText(path string, data []byte) (*text, error) {
	t := &text{path: path, data: data, aliased: map[string]int{}}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, t.refuse(0, "", "it starts with a byte order mark")
	}
	for i := 0; i < len(data); i++ {
		if data[i] == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			return nil, t.refuse(0, "", "it ends lines with a lone carriage return")
		}
	}
	if bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029")) || bytes.Contains(data, []byte("\u0085")) {
		return nil, t.refuse(0, "", "it holds Unicode line separators, which YAML may count as line breaks")
	}
	t.lines = append(t.lines, 0)
	for i, b := range data {
		if b == '\n' && i+1 < len(data) {
			t.lines = append(t.lines, i+1)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		n := &yaml.Node{}
		if err := dec.Decode(n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: invalid YAML: %w", path, err)
		}
		t.docs = append(t.docs, n)
		walk(n, func(c *yaml.Node) {
			if c.Kind == yaml.AliasNode {
				t.aliased[c.Value] = c.Line
			}
		})
	}
	t.segs = t.segments()
	return t, nil
}

// walk calls f on n and every node below it (not through aliases).
func walk(n *yaml.Node, f func(*yaml.Node)) {
	f(n)
	for _, c := range n.Content {
		walk(c, f)
	}
}

// isMarker reports whether a line is a document marker: --- alone or followed by a blank.
func isMarker(line []byte) bool {
	return bytes.HasPrefix(line, []byte("---")) && (len(line) == 3 || strings.ContainsRune(" \t\r\n", rune(line[3])))
}

// segments cuts the file at its document markers.
func (t *text) segments() []segment {
	segs := []segment{{start: 0, line: 1}}
	for i, off := range t.lines {
		if isMarker(t.data[off:t.lineEnd(i+1)]) {
			if off == 0 {
				segs[0].marker = true
				continue
			}
			segs[len(segs)-1].end = off
			segs = append(segs, segment{start: off, line: i + 1, marker: true})
		}
	}
	segs[len(segs)-1].end = len(t.data)
	return segs
}

// lineEnd is the offset just past the line break of line n (from 1), or the end of the file.
func (t *text) lineEnd(n int) int {
	if n < len(t.lines) {
		return t.lines[n]
	}
	return len(t.data)
}

// offset turns a node's line and column (from 1; the column counts characters) into a byte
// offset.
func (t *text) offset(line, col int) int {
	if line < 1 || line > len(t.lines) {
		return -1
	}
	off := t.lines[line-1]
	for i := 1; i < col && off < len(t.data); i++ {
		_, size := utf8.DecodeRune(t.data[off:])
		off += size
	}
	return off
}

// at is the offset of a node.
func (t *text) at(n *yaml.Node) int { return t.offset(n.Line, n.Column) }

// eol is the file's line break: CRLF when its first line ends so, else LF.
func (t *text) eol() string {
	if i := bytes.IndexByte(t.data, '\n'); i > 0 && t.data[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// CannotEditError is an edit that gpuctl refuses to make to a file, which the person can make
// by hand: a value written over several lines, a block shared through an anchor, ...
type CannotEditError struct {
	File   string
	Line   int
	Field  string
	Reason string
}

// Error is "file:line: field: cannot edit: reason; edit the file by hand".
func (e *CannotEditError) Error() string {
	where := e.File
	if e.Line > 0 {
		where += fmt.Sprintf(":%d", e.Line)
	}
	if e.Field != "" {
		where += ": " + e.Field
	}
	return where + ": cannot edit: " + e.Reason + "; edit the file by hand"
}

func (t *text) refuse(line int, field, format string, args ...any) error {
	return &CannotEditError{File: t.path, Line: line, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// docSegment returns the segment that holds document i, which must be the only document with
// content there.
func (t *text) docSegment(i int) (int, error) {
	root := t.root(i)
	if root == nil {
		return 0, fmt.Errorf("%s: no document %d", t.path, i)
	}
	k := sort.Search(len(t.segs), func(k int) bool { return t.segs[k].line > root.Line }) - 1
	for j := range t.docs {
		if r := t.root(j); j != i && r != nil && r.Line >= t.segs[k].line && (k+1 == len(t.segs) || r.Line < t.segs[k+1].line) {
			return 0, t.refuse(root.Line, "", "documents %d and %d share the text between two --- markers", i, j)
		}
	}
	return k, nil
}

// root is the content of document i, or nil for an empty document.
func (t *text) root(i int) *yaml.Node {
	if i < 0 || i >= len(t.docs) || len(t.docs[i].Content) == 0 {
		return nil
	}
	r := t.docs[i].Content[0]
	if r.Kind == yaml.ScalarNode && r.Tag == "!!null" {
		return nil
	}
	return r
}

// entry returns the key and value of a mapping's own entry (not one merged with <<), written
// in any of its spellings (pausedReplicas, paused-replicas, paused_replicas).
func entry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	names := render.Spellings(key)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if c := m.Content[i]; c.Kind == yaml.ScalarNode && c.Tag != "!!merge" && slices.Contains(names, c.Value) {
			return c, m.Content[i+1]
		}
	}
	return nil, nil
}

// hasMerge reports whether a mapping merges others (<<).
func hasMerge(m *yaml.Node) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Tag == "!!merge" {
			return true
		}
	}
	return false
}

// notShared refuses to edit nodes that an alias elsewhere copies: the edit would change the
// other places too.
func (t *text) notShared(field string, nodes ...*yaml.Node) error {
	for _, n := range nodes {
		if n == nil || n.Anchor == "" {
			continue
		}
		if line, used := t.aliased[n.Anchor]; used {
			return t.refuse(n.Line, field, "it is shared through the anchor &%s (used on line %d), and the edit would change both places", n.Anchor, line)
		}
	}
	return nil
}

// token returns the byte range of a scalar or alias value written on one line, its anchor
// and tag left out; flow tells a value inside a flow collection ({...} or [...]).
func (t *text) token(v *yaml.Node, field string, flow bool) (start, end int, err error) {
	p := t.at(v)
	if p < 0 {
		return 0, 0, t.refuse(v.Line, field, "its position is unknown")
	}
	lineEnd := t.lineEnd(v.Line)
	if v.Kind == yaml.AliasNode {
		if !bytes.HasPrefix(t.data[p:], []byte("*"+v.Value)) {
			return 0, 0, t.refuse(v.Line, field, "the alias is not where the parser says")
		}
		return p, p + 1 + len(v.Value), nil
	}
	if v.Kind != yaml.ScalarNode {
		return 0, 0, t.refuse(v.Line, field, "it is not a single value")
	}
	for p < lineEnd && (t.data[p] == '&' || t.data[p] == '!') { // anchor and tag
		for p < lineEnd && !strings.ContainsRune(" \t\r\n", rune(t.data[p])) {
			p++
		}
		for p < lineEnd && (t.data[p] == ' ' || t.data[p] == '\t') {
			p++
		}
	}
	switch {
	case v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return 0, 0, t.refuse(v.Line, field, "it is a block scalar (| or >)")
	case v.Style&yaml.DoubleQuotedStyle != 0:
		for i := p + 1; i < lineEnd; i++ {
			switch t.data[i] {
			case '\\':
				i++
			case '"':
				return p, i + 1, nil
			}
		}
	case v.Style&yaml.SingleQuotedStyle != 0:
		for i := p + 1; i < lineEnd; i++ {
			if t.data[i] == '\'' {
				if i+1 < lineEnd && t.data[i+1] == '\'' {
					i++
					continue
				}
				return p, i + 1, nil
			}
		}
	default:
		e := p
		for e < lineEnd {
			c := t.data[e]
			if c == '\n' || c == '\r' || (c == '#' && e > p && (t.data[e-1] == ' ' || t.data[e-1] == '\t')) ||
				(flow && (c == ',' || c == ']' || c == '}')) {
				break
			}
			e++
		}
		for e > p && (t.data[e-1] == ' ' || t.data[e-1] == '\t') {
			e--
		}
		if string(t.data[p:e]) == v.Value {
			return p, e, nil
		}
	}
	return 0, 0, t.refuse(v.Line, field, "the value is written over several lines")
}

// setValue replaces a value written on one line with text (its anchor and tag kept).
func (t *text) setValue(v *yaml.Node, field, text string, flow bool) (splice, error) {
	start, end, err := t.token(v, field, flow)
	if err != nil {
		return splice{}, err
	}
	return splice{start, end, text}, nil
}

// lineIndent is the indentation of a block mapping's key: the spaces before it on its line,
// which must hold nothing else (not "- key:").
func (t *text) lineIndent(k *yaml.Node, field string) (string, error) {
	start, at := t.lines[k.Line-1], t.at(k)
	if at < start || strings.Trim(string(t.data[start:at]), " ") != "" {
		return "", t.refuse(k.Line, field, "its first key does not start its line")
	}
	return string(t.data[start:at]), nil
}

// insertEntries adds entries (key, value) to mapping m (whose field path is field): in a
// block mapping on lines of their own after the first of the entries named in after whose
// value is written on one line (else before the first entry); in a flow mapping before the
// first entry.
func (t *text) insertEntries(m *yaml.Node, field string, after []string, entries [][2]string) (splice, error) {
	if m.Kind != yaml.MappingNode {
		return splice{}, t.refuse(m.Line, field, "it is not a mapping")
	}
	if m.Style&yaml.FlowStyle != 0 {
		parts := make([]string, len(entries))
		for i, e := range entries {
			parts[i] = e[0] + ": " + e[1]
		}
		if len(m.Content) == 0 {
			p := t.at(m)
			if p < 0 || p >= len(t.data) || t.data[p] != '{' {
				return splice{}, t.refuse(m.Line, field, "the mapping is not where the parser says")
			}
			return splice{p + 1, p + 1, strings.Join(parts, ", ")}, nil
		}
		p := t.at(m.Content[0])
		return splice{p, p, strings.Join(parts, ", ") + ", "}, nil
	}
	if len(m.Content) == 0 {
		return splice{}, t.refuse(m.Line, field, "the mapping is empty")
	}
	indent, err := t.lineIndent(m.Content[0], field)
	if err != nil {
		return splice{}, err
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(indent + e[0] + ": " + e[1] + t.eol())
	}
	lines := b.String()
	for _, a := range after {
		k, v := entry(m, a)
		if k == nil || v.Line != k.Line {
			continue
		}
		if _, _, err := t.token(v, field+"."+a, false); err != nil {
			continue // not a value on one line
		}
		p := t.lineEnd(v.Line)
		if p == len(t.data) && !bytes.HasSuffix(t.data, []byte("\n")) {
			lines = t.eol() + strings.TrimSuffix(lines, t.eol())
		}
		return splice{p, p, lines}, nil
	}
	p := t.lines[m.Content[0].Line-1]
	return splice{p, p, lines}, nil
}

// removeEntry removes a mapping's own entry key whose value is written on one line: its whole
// line in a block mapping, the entry and a comma in a flow mapping.
func (t *text) removeEntry(m *yaml.Node, field, key string) (splice, error) {
	k, v := entry(m, key)
	if k == nil {
		return splice{}, fmt.Errorf("%s: %s.%s is not written", t.path, field, key)
	}
	flow := m.Style&yaml.FlowStyle != 0
	_, vEnd, err := t.token(v, field+"."+key, flow)
	if err != nil {
		return splice{}, err
	}
	if len(m.Content) == 2 && !flow {
		return splice{}, t.refuse(k.Line, field, "%s is its only entry", key)
	}
	if flow {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i] != k {
				continue
			}
			if i+2 < len(m.Content) { // up to the next entry
				return splice{t.at(k), t.at(m.Content[i+2]), ""}, nil
			}
			if i == 0 {
				return splice{t.at(k), vEnd, ""}, nil
			}
			_, prevEnd, err := t.token(m.Content[i-1], field, true)
			if err != nil {
				return splice{}, err
			}
			return splice{prevEnd, vEnd, ""}, nil
		}
	}
	if v.Line != k.Line {
		return splice{}, t.refuse(k.Line, field+"."+key, "its value is not on the key's line")
	}
	if _, err := t.lineIndent(k, field); err != nil {
		return splice{}, err
	}
	rest := strings.TrimSpace(string(t.data[vEnd:t.lineEnd(k.Line)]))
	if rest != "" && !strings.HasPrefix(rest, "#") {
		return splice{}, t.refuse(k.Line, field+"."+key, "the line holds more than the entry")
	}
	start, end := t.lines[k.Line-1], t.lineEnd(k.Line)
	if end == len(t.data) && !bytes.HasSuffix(t.data, []byte("\n")) && start > 0 {
		// The last line, without a line break: the break before it goes instead.
		start--
		if start > 0 && t.data[start-1] == '\r' {
			start--
		}
	}
	return splice{start, end, ""}, nil
}

// appendBlock adds a block key: with entries (key, value) at the end of a document whose root
// is a block mapping, after its last line of content; in a flow root, as a flow mapping.
func (t *text) appendBlock(doc int, key string, entries [][2]string) (splice, error) {
	root := t.root(doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return splice{}, fmt.Errorf("%s: document %d is not a mapping", t.path, doc)
	}
	if root.Style&yaml.FlowStyle == 0 && len(root.Content) > 0 && root.Content[0].Column != 1 {
		return splice{}, t.refuse(root.Line, "", "the document's keys are indented")
	}
	if root.Style&yaml.FlowStyle != 0 {
		parts := make([]string, len(entries))
		for i, e := range entries {
			parts[i] = e[0] + ": " + e[1]
		}
		return t.insertEntries(root, "", nil, [][2]string{{key, "{" + strings.Join(parts, ", ") + "}"}})
	}
	k, err := t.docSegment(doc)
	if err != nil {
		return splice{}, err
	}
	seg := t.segs[k]
	// After the last line that holds content: comments and blank lines at the end of a
	// document are left where they are.
	p := seg.end
	for line := len(t.lines); line >= 1; line-- {
		start := t.lines[line-1]
		if start < seg.start || start >= seg.end {
			continue
		}
		s := strings.TrimSpace(string(t.data[start:t.lineEnd(line)]))
		if s != "" && !strings.HasPrefix(s, "#") && !isMarker([]byte(s)) {
			p = t.lineEnd(line)
			break
		}
	}
	indent := t.childIndent(root)
	var b strings.Builder
	if p == len(t.data) && len(t.data) > 0 && !bytes.HasSuffix(t.data, []byte("\n")) {
		b.WriteString(t.eol())
	}
	b.WriteString(key + ":" + t.eol())
	for _, e := range entries {
		b.WriteString(indent + e[0] + ": " + e[1] + t.eol())
	}
	return splice{p, p, b.String()}, nil
}

// childIndent is the indentation of the document's nested block mappings (2 if none).
func (t *text) childIndent(root *yaml.Node) string {
	for i := 1; i < len(root.Content); i += 2 {
		v := root.Content[i]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Content[0].Column > 1 {
			return strings.Repeat(" ", v.Content[0].Column-1)
		}
	}
	return "  "
}

// apply returns the file with the splices made (they must not overlap).
func (t *text) apply(splices ...splice) []byte {
	sort.Slice(splices, func(i, j int) bool { return splices[i].start < splices[j].start })
	var b bytes.Buffer
	last := 0
	for _, s := range splices {
		b.Write(t.data[last:s.start])
		b.WriteString(s.text)
		last = s.end
	}
	b.Write(t.data[last:])
	return b.Bytes()
}
