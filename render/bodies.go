package render

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Bodies are the bodies of the objects that a render with Options.Deferred handed out as
// heads (apiVersion, kind and metadata alone): what a sync of a revision whose files barely
// changed needs of most objects, which are then not decoded (issue #18, bar 6: a training
// Job's body is ~3 KB of maps; 10,000 of them made each sync's peak). A reader of an object's
// body calls Materialize first, and Release when done: the object is whole in between. Only
// the metadata of such an object may be written (as the engine does): Release drops the rest.
//
// The methods of a nil *Bodies do nothing. Materialize and Release of different objects may
// run at once; an object is materialized by one goroutine at a time.
type Bodies struct {
	m       map[*unstructured.Unstructured]*deferredBody
	table   []any // the cache's table of shared values, as it was when the render ended
	decoded atomic.Int64
}

// deferredBody is the cache's encoding of an object, and whether its body is decoded now.
type deferredBody struct {
	enc   []byte
	whole bool
}

// Materialize decodes the body of a deferred object into it and reports true; false when u is
// whole already (not deferred, or materialized and not released since).
func (b *Bodies) Materialize(u *unstructured.Unstructured) bool {
	d := b.of(u)
	if d == nil || d.whole {
		return false
	}
	decodeBody(d.enc, b.table, u.Object)
	d.whole = true
	b.decoded.Add(1)
	return true
}

// Decoded counts the bodies that Materialize decoded.
func (b *Bodies) Decoded() int64 {
	if b == nil {
		return 0
	}
	return b.decoded.Load()
}

// Release drops the body of a deferred object again, leaving its head.
func (b *Bodies) Release(u *unstructured.Unstructured) {
	d := b.of(u)
	if d == nil || !d.whole {
		return
	}
	for k := range u.Object {
		if !headKey(k) {
			delete(u.Object, k)
		}
	}
	d.whole = false
}

// Whole materializes u and returns what releases it: nothing when u was whole already, so
// that a caller that holds u whole keeps it so.
func (b *Bodies) Whole(u *unstructured.Unstructured) (release func()) {
	if !b.Materialize(u) {
		return func() {}
	}
	return func() { b.Release(u) }
}

// Deferred reports whether u is a deferred object (whole now or not).
func (b *Bodies) Deferred(u *unstructured.Unstructured) bool { return b.of(u) != nil }

// Len is the number of deferred objects.
func (b *Bodies) Len() int {
	if b == nil {
		return 0
	}
	return len(b.m)
}

func (b *Bodies) of(u *unstructured.Unstructured) *deferredBody {
	if b == nil || u == nil {
		return nil
	}
	return b.m[u]
}

// keepWhole materializes u for good: a render step writes its body (it is no longer deferred).
func (b *Bodies) keepWhole(u *unstructured.Unstructured) {
	if d := b.of(u); d != nil {
		b.Materialize(u)
		delete(b.m, u)
	}
}

// BodyKey names the content of a deferred object: objects of equal keys, from this render or
// another, are equal (the same encoding in the cache, which is never written). A key holds
// the encoding it names, so that no other can take its place while the key is kept.
type BodyKey struct {
	enc *byte
	n   int
}

// Key returns the key of a deferred object's content; false for any other object.
func (b *Bodies) Key(u *unstructured.Unstructured) (BodyKey, bool) {
	d := b.of(u)
	if d == nil {
		return BodyKey{}, false
	}
	return BodyKey{enc: unsafe.SliceData(d.enc), n: len(d.enc)}, true
}

// AppendJSON appends to buf object.AppendJSON of u as it is whole, without materializing it:
// a deferred object's body is written from the cache's encoding (the same bytes: keys
// sorted), its head from its maps as they are now. The drift detector compresses the objects
// of a first sync so, without decoding each one's body again.
func (b *Bodies) AppendJSON(buf []byte, u *unstructured.Unstructured) ([]byte, error) {
	d := b.of(u)
	if d == nil || d.whole {
		return object.AppendJSON(buf, u.Object)
	}
	var small [8]jsonField
	fields := small[:0]
	for k, v := range u.Object {
		fields = append(fields, jsonField{key: k, value: v})
	}
	eachField(d.enc, func(k string, v []byte) {
		if !headKey(k) {
			fields = append(fields, jsonField{key: k, enc: v})
		}
	})
	return appendJSONFields(buf, fields, b.table)
}

// jsonField is a field of a map written as JSON: its value decoded, or its encoding.
type jsonField struct {
	key   string
	value any
	enc   []byte
}

// appendJSONFields writes fields as a JSON object, in the order of their keys.
func appendJSONFields(buf []byte, fields []jsonField, table []any) ([]byte, error) {
	slices.SortFunc(fields, func(a, b jsonField) int { return strings.Compare(a.key, b.key) })
	buf = append(buf, '{')
	for i, f := range fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(object.AppendJSONString(buf, f.key), ':')
		var err error
		if f.enc != nil {
			buf, _, err = appendEncodedJSON(buf, f.enc, table)
		} else {
			buf, err = object.AppendJSON(buf, f.value)
		}
		if err != nil {
			return buf, err
		}
	}
	return append(buf, '}'), nil
}

// appendEncodedJSON writes the value that b starts with as object.AppendJSON writes it
// decoded, and returns the bytes after it.
func appendEncodedJSON(buf, b []byte, table []any) ([]byte, []byte, error) {
	tag := b[0]
	switch tag {
	case tagShared:
		i, w := binary.Uvarint(b[1:])
		out, err := object.AppendJSON(buf, table[i])
		return out, b[1+w:], err
	case tagString:
		s, rest := decodeString(b[1:])
		return object.AppendJSONString(buf, s), rest, nil
	case tagMap:
		var small [8]jsonField
		fields := small[:0]
		rest := eachField(b, func(k string, v []byte) { fields = append(fields, jsonField{key: k, enc: v}) })
		out, err := appendJSONFields(buf, fields, table)
		return out, rest, err
	case tagList:
		n, w := binary.Uvarint(b[1:])
		b = b[1+w:]
		buf = append(buf, '[')
		for i := uint64(0); i < n; i++ {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, b, err = appendEncodedJSON(buf, b, table); err != nil {
				return buf, b, err
			}
		}
		return append(buf, ']'), b, nil
	case tagInt:
		i, w := binary.Varint(b[1:])
		return strconv.AppendInt(buf, i, 10), b[1+w:], nil
	}
	v, rest := decodeValue(b, table) // null, a boolean or a float
	out, err := object.AppendJSON(buf, v)
	return out, rest, err
}
