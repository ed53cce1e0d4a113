package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
)

// MaxFileSize is the largest source file read; gpuctl files are a few hundred bytes.
const MaxFileSize = 1 << 20

// ParseFile parses every document of one file. The name is used in diagnostics only.
// It never panics on any input: problems become diagnostics.
func ParseFile(name string, data []byte) ([]*Document, []*Diagnostic) {
	ds := &diagnostics{}
	docs := parseFile(name, data, ds)
	return docs, ds.sorted()
}

func parseFile(name string, data []byte, ds *diagnostics) []*Document {
	if tooLarge(ds, name, int64(len(data))) {
		return nil
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		ds.errorf(name, Pos{}, "", "not a text file (binary or not UTF-8)")
		return nil
	}
	nodes, err := decodeAll(data)
	if err != nil {
		// A line holding only tabs is blank to YAML 1.2 but an error to go-yaml: read such
		// files again with those lines blanked, and say so.
		fixed, changed := blankTabLines(data)
		if len(changed) == 0 {
			syntaxError(name, err, ds, data)
		} else if nodes, err = decodeAll(fixed); err != nil {
			syntaxError(name, err, ds, data)
		} else {
			for _, l := range changed {
				ds.warnf(name, Pos{Line: l}, "", "a line holding only a tab was read as blank; indent with spaces")
			}
		}
	}
	var docs []*Document
	for i, n := range nodes {
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			continue // an empty document, e.g. a trailing ---
		}
		if doc := parseDocument(name, i, n.Content[0], ds); doc != nil {
			docs = append(docs, doc)
		}
	}
	return docs
}

// decodeAll parses every document of a YAML stream; on a syntax error it returns the
// documents before it and the error.
func decodeAll(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*yaml.Node
	for {
		n := &yaml.Node{}
		err := dec.Decode(n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, n)
	}
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// syntaxError turns a YAML parser error into a diagnostic with its line and a hint.
func syntaxError(name string, err error, ds *diagnostics, data []byte) {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	p := Pos{}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	// The file may not be YAML at all (a token, a key): its text is never quoted.
	d := ds.errorf(name, p, "", "invalid YAML: %s", redactYAML(msg))
	line := lineOf(data, p.Line)
	switch {
	case strings.Contains(line, "\t"):
		d.Hint = "line " + strconv.Itoa(p.Line) + " holds a tab; YAML indents with spaces only"
	case strings.Contains(line, "`"):
		d.Hint = "line " + strconv.Itoa(p.Line) + " holds a backtick (`) that YAML cannot read; remove it or quote the value"
	case strings.Contains(msg, "did not find expected key"):
		d.Hint = "check the indentation of this line and the one before"
	}
}

// lineOf returns line n (from 1) of data, or "".
func lineOf(data []byte, n int) string {
	if n < 1 {
		return ""
	}
	lines := bytes.SplitN(data, []byte("\n"), n+1)
	if len(lines) < n {
		return ""
	}
	return string(lines[n-1])
}

// blankTabLines blanks lines made only of spaces and tabs, which YAML 1.2 reads as empty but
// go-yaml rejects; line numbers stay the same. It returns the numbers of the lines changed.
func blankTabLines(data []byte) ([]byte, []int) {
	lines := bytes.Split(data, []byte("\n"))
	var changed []int
	for i, l := range lines {
		if len(bytes.TrimRight(l, " \t\r")) == 0 && bytes.IndexByte(l, '\t') >= 0 {
			lines[i] = nil
			changed = append(changed, i+1)
		}
	}
	return bytes.Join(lines, []byte("\n")), changed
}

// parseDocument decodes one document by its kind.
func parseDocument(name string, index int, n *yaml.Node, ds *diagnostics) *Document {
	doc := &Document{File: name, Index: index, Pos: posOf(n), pos: map[string]Pos{}}
	if n.Kind != yaml.MappingNode {
		ds.errorf(name, doc.Pos, "", "expected a mapping with kind and version, got %s", shapeOf(n))
		return nil
	}
	kindNode, apiVersion := topLevel(n, "kind"), topLevel(n, "apiVersion")
	if apiVersion != nil {
		if doc = parseManifest(doc, n, ds); doc != nil {
			doc.compactFields()
		}
		return doc
	}
	if kindNode == nil {
		ds.errorf(name, doc.Pos, "kind", "required field is missing").Hint =
			"gpuctl documents start with kind (" + strings.Join(allKinds[:6], ", ") + ") and version: " + Version
		return nil
	}
	d := &decoder{file: name, diags: ds, pos: doc.pos}
	doc.Kind = kindNode.Value
	switch kindNode.Value {
	case KindTraining, KindInference, KindNotebook, KindCompute:
		doc.Workload = &Workload{}
		d.decode(n, reflect.ValueOf(doc.Workload).Elem(), "")
	case KindPool:
		var p poolDoc
		d.decode(n, reflect.ValueOf(&p).Elem(), "")
		doc.Kind, doc.Pool = KindPool, &Pool{Metadata: p.Metadata, Nodes: p.Nodes}
	case KindResource:
		var p resourceDoc
		d.decode(n, reflect.ValueOf(&p).Elem(), "")
		doc.Kind, doc.Pool = KindPool, &Pool{Metadata: p.Pool, Nodes: p.Nodes}
		renamePrefix(doc.pos, "pool.", "metadata.")
	case KindQuota:
		doc.Quota = parseQuota(d, n, doc)
	default:
		diag := ds.errorf(name, posOf(kindNode), "kind", "unknown kind %q", kindNode.Value)
		if best := suggest(kindNode.Value, allKinds); best != "" {
			diag.Hint = fmt.Sprintf("did you mean %q?", best)
		} else {
			diag.Hint = "expected one of " + strings.Join(allKinds[:6], ", ") + " (Kubernetes manifests need apiVersion)"
		}
		return nil
	}
	checkVersion(doc, n, ds)
	doc.compactFields()
	return doc
}

func parseQuota(d *decoder, n *yaml.Node, doc *Document) *Quota {
	var q quotaDoc
	d.decode(n, reflect.ValueOf(&q).Elem(), "")
	users := q.Users
	switch {
	case doc.Has("users") && doc.Has("namespace"):
		d.diags.errorf(doc.File, doc.At("namespace"), "namespace", "users and namespace are two spellings of the same map; keep one")
	case doc.Has("namespace"):
		users = q.Namespace
		renamePrefix(doc.pos, "namespace", "users")
	case !doc.Has("users"):
		d.diags.errorf(doc.File, doc.Pos, "users", "required field is missing").Hint = "list users: {alice: {cpu: 10, memory: 20Gi, gpu: 4}}"
	}
	return &Quota{Metadata: q.Metadata, Users: users}
}

// renamePrefix renames recorded field paths, so that both spellings of a block report alike.
func renamePrefix(pos map[string]Pos, from, to string) {
	for k, v := range pos {
		if strings.HasPrefix(k, from) {
			pos[to+strings.TrimPrefix(k, from)] = v
		}
	}
}

func checkVersion(doc *Document, n *yaml.Node, ds *diagnostics) {
	v := topLevel(n, "version")
	if v == nil || v.Kind != yaml.ScalarNode || v.Value == Version {
		return // missing or mistyped versions are reported by the decoder
	}
	ds.errorf(doc.File, posOf(v), "version", "unsupported version %q", v.Value).Hint = "the supported version is " + Version
}

// topLevel returns the value of a key of mapping n, or nil.
func topLevel(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i].Kind == yaml.ScalarNode {
			return n.Content[i+1]
		}
	}
	return nil
}

// parseManifest reads a plain Kubernetes object with YAML 1.2 rules (y, yes and on are
// strings, as kubectl reads them).
func parseManifest(doc *Document, n *yaml.Node, ds *diagnostics) *Document {
	doc.Kind = KindManifest
	var v any
	if err := n.Decode(&v); err != nil {
		// A key written twice is refused: parsers disagree on which value wins, and the
		// API server must see what was checked.
		at, msg := doc.Pos, strings.TrimPrefix(err.Error(), "yaml: ")
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
			if m := yamlLine.FindStringSubmatch("yaml: " + msg); m != nil && m[1] != "" {
				at.Line, _ = strconv.Atoi(m[1])
				at.Column, msg = 0, m[2]
			}
		}
		ds.errorf(doc.File, at, "", "invalid Kubernetes manifest: %s", redactYAML(msg))
		return nil
	}
	var err error
	if m, isMap := v.(map[string]any); isMap && jsonValueOK(m) {
		doc.Manifest = m
	} else {
		var js []byte
		if js, err = json.Marshal(v); err == nil {
			err = k8sjson.Unmarshal(js, &doc.Manifest) // numbers as int64 or float64, as unstructured wants
		}
	}
	if err != nil { // the messages of encoding/json quote values: never shown
		ds.errorf(doc.File, doc.Pos, "", "invalid Kubernetes manifest: a key or value has no JSON form (a key that is not a string, or a number out of range)")
		return nil
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if s, _ := doc.Manifest[f].(string); s == "" {
			ds.errorf(doc.File, doc.Pos, f, "a Kubernetes manifest needs a non-empty string %s", f)
			return nil
		}
	}
	meta, _ := doc.Manifest["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name == "" {
		ds.errorf(doc.File, doc.Pos, "metadata.name", "a Kubernetes manifest needs a non-empty string metadata.name")
		return nil
	}
	return doc
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// jsonValueOK is jsonValue of a map, in place.
func jsonValueOK(m map[string]any) bool {
	_, ok := jsonValue(m)
	return ok
}

// jsonValue turns a value decoded from YAML into what its JSON round trip gives (json.Marshal,
// then k8s.io/apimachinery's json.Unmarshal: numbers that are integers as int64, the others as
// float64), in place and without the text in between: a third of parsing a manifest. It
// reports false for what only the round trip decides (a timestamp, a key that is not a
// string, invalid UTF-8, an integer beyond int64, NaN); v may then be half converted, which
// changes nothing of its JSON form.
func jsonValue(v any) (any, bool) {
	switch t := v.(type) {
	case nil, bool:
		return t, true
	case string:
		return t, utf8.ValidString(t)
	case int:
		return int64(t), true
	case int64:
		return t, true
	case uint64:
		return int64(t), t <= math.MaxInt64
	case float64:
		switch {
		case math.IsNaN(t) || math.IsInf(t, 0):
			return nil, false
		case t != math.Trunc(t) || math.Abs(t) >= 1e21: // JSON writes a fraction or an exponent
			return t, true
		case math.Abs(t) < 1<<53: // written as this integer (beyond, as its shortest digits and zeros)
			return int64(t), true
		}
		return nil, false
	case map[string]any:
		for k, e := range t {
			c, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			t[k] = c
		}
		return t, true
	case []any:
		for i, e := range t {
			c, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			t[i] = c
		}
		return t, true
	}
	return nil, false
}
