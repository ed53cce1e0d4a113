package render

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The decoder maps a YAML node tree onto the schema structs of spec.go. Struct tags name the
// field in its documented spelling (docs/format.md): `gpuctl:"gpu-type"`; `gpuctl:"name,required"`; `gpuctl:",key"`
// marks the field that receives the key when a slice of structs is written as a mapping
// (nodes: {node1: {...}}), and `gpuctl:",value"` the field that receives the whole value when
// each entry is a scalar (teams: {alice@example.com: alice}); `gpuctl:",inline"` on an embedded struct reads its fields as the
// outer struct's own. Every field accepts its kebab, snake and camel spelling.
//
// It never stops at the first problem: each one becomes a Diagnostic and decoding goes on.

// maxNodes bounds the YAML nodes visited in one document, so alias bombs cannot hang a render.
const maxNodes = 200000

// maxInt bounds integers (GPUs, replicas, ports) far above any real value.
const maxInt = 1 << 20

var quantityType = reflect.TypeOf(resource.Quantity{})

// wholeNumber matches integers too large for YAML's int, which it then tags as floats.
var wholeNumber = regexp.MustCompile(`^[-+]?[0-9]+$`)

type schemaField struct {
	index     []int // reflect.Value.FieldByIndex
	name      string
	spellings []string
	required  bool
}

type schema struct {
	fields []schemaField
	byName map[string]int // spelling -> position in fields
	key    int            // index of the ",key" field, or -1
	value  int            // index of the ",value" field, or -1
}

var schemas sync.Map // reflect.Type -> *schema

func schemaOf(t reflect.Type) *schema {
	if s, ok := schemas.Load(t); ok {
		return s.(*schema)
	}
	s := &schema{byName: map[string]int{}, key: -1, value: -1}
	for i := 0; i < t.NumField(); i++ {
		tag, ok := t.Field(i).Tag.Lookup("gpuctl")
		if !ok || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		switch opts {
		case "key":
			s.key = i
			continue
		case "value":
			s.value = i
			continue
		case "inline":
			for _, f := range schemaOf(t.Field(i).Type).fields {
				f.index = append([]int{i}, f.index...)
				s.add(f)
			}
			continue
		}
		s.add(schemaField{index: []int{i}, name: name, spellings: spellings(name), required: opts == "required"})
	}
	schemas.Store(t, s)
	return s
}

// add appends a field, known by each of its spellings.
func (s *schema) add(f schemaField) {
	for _, sp := range f.spellings {
		s.byName[sp] = len(s.fields)
	}
	s.fields = append(s.fields, f)
}

// decoder decodes one document; positions of every decoded value are kept for later checks.
type decoder struct {
	file  string
	diags *diagnostics
	pos   map[string]Pos
	nodes int
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func posOf(n *yaml.Node) Pos { return Pos{Line: n.Line, Column: n.Column} }

func (d *decoder) errorf(n *yaml.Node, field, format string, args ...any) *Diagnostic {
	return d.diags.errorf(d.file, posOf(n), field, format, args...)
}

// fail reports a value that could not be decoded; the field then counts as not set, so later
// checks do not pile further errors onto it.
func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) *Diagnostic {
	delete(d.pos, field)
	return d.errorf(n, field, format, args...)
}

// decode fills v (addressable) from n; path is the field path used in messages.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.nodes++; d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.errorf(n, path, "document too large or too deeply aliased (more than %d YAML nodes)", maxNodes)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.pos[path] = posOf(n)
	switch {
	case v.Type() == quantityType:
		d.decodeQuantity(n, v, path)
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case v.Kind() == reflect.Struct:
		d.decodeStruct(n, v, path)
	case v.Kind() == reflect.Slice:
		d.decodeSlice(n, v, path)
	case v.Kind() == reflect.String:
		if s, ok := d.scalar(n, path, "a string"); ok {
			v.SetString(s)
		}
	case v.Kind() == reflect.Int:
		d.decodeInt(n, v, path)
	case v.Kind() == reflect.Bool:
		if s, ok := d.scalar(n, path, "true or false"); ok {
			b, err := strconv.ParseBool(s)
			if err != nil || n.Tag != "!!bool" {
				d.fail(n, path, "expected true or false, got %q", s)
				return
			}
			v.SetBool(b)
		}
	default:
		panic(fmt.Sprintf("render: no decoder for %s", v.Type()))
	}
}

// scalar returns the text of a scalar node; other kinds are type errors.
func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.fail(n, path, "expected %s, got %s", want, describe(n))
		return "", false
	}
	return n.Value, true
}

// describe names a gpuctl document's value for a type error: scalars with their text (the
// document is the user's own gpuctl file), everything else by its shape (shapeOf).
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return shapeOf(n)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		}
		return strconv.Quote(n.Value)
	}
	return shapeOf(n)
}

func (d *decoder) decodeInt(n *yaml.Node, v reflect.Value, path string) {
	s, ok := d.scalar(n, path, "an integer")
	if !ok {
		return
	}
	if n.Tag == "!!float" && wholeNumber.MatchString(s) {
		d.fail(n, path, "integer %s is out of range (at most %d)", s, maxInt)
		return
	}
	if n.Tag != "!!int" {
		d.fail(n, path, "expected an integer, got %s", describe(n))
		return
	}
	i, err := strconv.ParseInt(s, 0, 64)
	if err != nil || i > maxInt || i < -maxInt {
		d.fail(n, path, "integer %s is out of range (at most %d)", s, maxInt)
		return
	}
	v.SetInt(i)
}

func (d *decoder) decodeQuantity(n *yaml.Node, v reflect.Value, path string) {
	s, ok := d.scalar(n, path, "a quantity such as 8, 500m or 32Gi")
	if !ok {
		return
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		d.fail(n, path, "invalid quantity %q: expected a number with an optional unit such as 8, 500m or 32Gi", s)
		return
	}
	if f := q.AsApproximateFloat64(); math.IsInf(f, 0) || f > 1e18 {
		d.fail(n, path, "quantity %q is out of range", s)
		return
	}
	v.Set(reflect.ValueOf(q))
}

// entry is one key/value pair of a mapping, with merge keys (<<) resolved.
type entry struct{ key, value *yaml.Node }

// entries lists a mapping's pairs; pairs from merge keys come after explicit ones.
func (d *decoder) entries(n *yaml.Node) []entry {
	var own, merged []entry
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			if val.Kind == yaml.AliasNode {
				val = val.Alias
			}
			srcs := []*yaml.Node{val}
			if val.Kind == yaml.SequenceNode {
				srcs = val.Content
			}
			for _, src := range srcs {
				if src.Kind == yaml.AliasNode {
					src = src.Alias
				}
				if src.Kind == yaml.MappingNode {
					merged = append(merged, d.entries(src)...)
				}
			}
			continue
		}
		own = append(own, entry{k, val})
	}
	have := make(map[string]bool, len(own))
	for _, e := range own {
		have[e.key.Value] = true
	}
	for _, e := range merged { // explicit keys override merged ones; the first merge wins
		if !have[e.key.Value] {
			have[e.key.Value] = true
			own = append(own, e)
		}
	}
	return own
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		got := describe(n)
		if path == "" { // a whole document that is not a mapping may not be ours: never quoted
			got = shapeOf(n)
		}
		d.fail(n, path, "expected a mapping, got %s", got)
		return
	}
	s := schemaOf(v.Type())
	seen := map[int]*yaml.Node{}
	for _, e := range d.entries(n) {
		if e.key.Kind != yaml.ScalarNode {
			d.errorf(e.key, path, "keys must be plain names, got %s", describe(e.key))
			continue
		}
		idx, ok := s.byName[e.key.Value]
		if !ok {
			d.unknownField(e.key, s, path)
			continue
		}
		f := s.fields[idx]
		if prev, dup := seen[idx]; dup {
			if prev.Line == e.key.Line && prev.Column == e.key.Column {
				continue // the same key reached again through a merge
			}
			if prev.Value == e.key.Value {
				d.errorf(e.key, join(path, f.name), "duplicate key %q (first set on line %d)", e.key.Value, prev.Line)
			} else {
				d.errorf(e.key, join(path, f.name), "%q and %q are two spellings of the same field (first set on line %d); keep one",
					prev.Value, e.key.Value, prev.Line)
			}
			continue
		}
		seen[idx] = e.key
		if e.value.Tag == "!!null" && !f.required {
			continue // `key:` with no value means the field is not set
		}
		d.decode(e.value, v.FieldByIndex(f.index), join(path, f.name))
	}
	for idx, f := range s.fields {
		if _, ok := seen[idx]; !ok && f.required {
			d.errorf(n, join(path, f.name), "required field is missing")
		}
	}
}

func (d *decoder) unknownField(k *yaml.Node, s *schema, path string) {
	var names []string
	for _, f := range s.fields {
		names = append(names, f.name)
	}
	diag := d.errorf(k, join(path, k.Value), "unknown field %q", k.Value)
	if best := suggest(k.Value, names); best != "" {
		diag.Hint = fmt.Sprintf("did you mean %q?", best)
	} else {
		diag.Hint = "expected one of " + strings.Join(names, ", ")
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	elem := v.Type().Elem()
	if elem.Kind() == reflect.Struct && schemaOf(elem).key >= 0 {
		d.decodeKeyed(n, v, path)
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "expected a list, got %s", describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(out)
}

// decodeKeyed decodes a mapping of name -> struct into a slice of structs, keeping file order.
func (d *decoder) decodeKeyed(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping of names, got %s", describe(n))
		return
	}
	keyIdx, valueIdx := schemaOf(v.Type().Elem()).key, schemaOf(v.Type().Elem()).value
	seen := map[string]int{}
	out := reflect.MakeSlice(v.Type(), 0, len(n.Content)/2)
	for _, e := range d.entries(n) {
		if e.key.Kind != yaml.ScalarNode || e.key.Value == "" {
			d.errorf(e.key, path, "expected a name, got %s", describe(e.key))
			continue
		}
		name := e.key.Value
		if line, dup := seen[name]; dup {
			d.errorf(e.key, join(path, name), "duplicate key %q (first set on line %d)", name, line)
			continue
		}
		seen[name] = e.key.Line
		item := reflect.New(v.Type().Elem()).Elem()
		item.Field(keyIdx).SetString(name)
		p := join(path, name)
		d.pos[p] = posOf(e.key)
		switch {
		case valueIdx >= 0:
			d.decode(e.value, item.Field(valueIdx), p)
			d.pos[p] = posOf(e.key)
		case e.value.Tag != "!!null":
			d.decode(e.value, item, p)
			d.pos[p] = posOf(e.key)
		}
		out = reflect.Append(out, item)
	}
	v.Set(out)
}
