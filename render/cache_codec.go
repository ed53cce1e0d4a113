package render

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"unsafe"
)

// The cache keeps rendered objects in a compact binary form of their JSON values: half the
// heap of the maps themselves, and decoded about twice as fast as JSON (no scanning, no
// unquoting; strings point into the encoded bytes, which are never written again).
//
// A map or list below an object's top level and outside its metadata that the cache has met
// twice is kept once, decoded (the interner's table), and the encodings refer to it
// (tagShared): the objects of 10,000 training files share their affinity, tolerations,
// volumes and resources, so decoding them for a render makes half the maps it made, and half
// the garbage. Such a value is shared by every object decoded from the cache, and by every
// render: nothing writes below an object's metadata but suspendQueuedJobs, which copies what it
// writes (ownMap).
const (
	tagNull byte = iota
	tagFalse
	tagTrue
	tagInt
	tagFloat
	tagString
	tagMap
	tagList
	tagShared
)

// interner is the cache's table of shared values; the Cache's lock guards it.
type interner struct {
	seen  map[uint64]bool  // hashes of encodings met once
	index map[string]int32 // encoding → position in table
	table []any            // the decoded shared values
	bytes int64            // approximate heap of index and table
	max   int64            // no new value once bytes passes it
}

// encodeObject appends the encoding of a map of JSON values, in which the values below the
// top level, but the metadata, may be shared; false when it holds another type.
func encodeObject(buf []byte, m map[string]any, in *interner) ([]byte, bool) {
	buf = binary.AppendUvarint(append(buf, tagMap), uint64(len(m)))
	for k, e := range m {
		buf = append(binary.AppendUvarint(buf, uint64(len(k))), k...)
		var ok bool
		if k == "metadata" {
			buf, ok = encodeValue(buf, e)
		} else {
			buf, ok = in.encode(buf, e)
		}
		if !ok {
			return buf, false
		}
	}
	return buf, true
}

// encode appends the encoding of v, referring to the table for the maps and lists it holds.
func (in *interner) encode(buf []byte, v any) ([]byte, bool) {
	var inner []byte
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			return encodeValue(buf, v)
		}
		inner = binary.AppendUvarint(append(inner, tagMap), uint64(len(t)))
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys) // one encoding for equal maps
		for _, k := range keys {
			inner = append(binary.AppendUvarint(inner, uint64(len(k))), k...)
			var ok bool
			if inner, ok = in.encode(inner, t[k]); !ok {
				return buf, false
			}
		}
	case []any:
		if len(t) == 0 {
			return encodeValue(buf, v)
		}
		inner = binary.AppendUvarint(append(inner, tagList), uint64(len(t)))
		for _, e := range t {
			var ok bool
			if inner, ok = in.encode(inner, e); !ok {
				return buf, false
			}
		}
	default:
		return encodeValue(buf, v)
	}
	if i, ok := in.index[string(inner)]; ok {
		return binary.AppendUvarint(append(buf, tagShared), uint64(i)), true
	}
	h := maphash.Bytes(internSeed, inner)
	if !in.seen[h] {
		if in.bytes+seenBytes > in.max && len(in.seen) > 0 {
			// Full of values met once (a long-lived daemon's past revisions): forget them,
			// so that the values met from now on may still be shared while the table has room.
			in.bytes -= seenBytes * int64(len(in.seen))
			clear(in.seen)
		}
		if in.bytes+seenBytes <= in.max {
			in.seen[h] = true
			in.bytes += seenBytes
		}
		return append(buf, inner...), true
	}
	delete(in.seen, h)
	in.bytes -= seenBytes
	if in.bytes >= in.max {
		return append(buf, inner...), true
	}
	key := string(inner)
	shared, _ := decodeValue(unsafe.Slice(unsafe.StringData(key), len(key)), in.table)
	n := int64(len(key)) + sizeOf(shared) + 64
	if in.bytes+n > in.max { // the table is full: the value stays in the encoding
		return append(buf, inner...), true
	}
	i := int32(len(in.table))
	in.table = append(in.table, shared)
	in.index[key] = i
	in.bytes += n
	return binary.AppendUvarint(append(buf, tagShared), uint64(i)), true
}

var internSeed = maphash.MakeSeed()

// seenBytes is the approximate heap of a hash in interner.seen.
const seenBytes = 16

// sizeOf is the approximate heap of a decoded value (Go's maps hold groups of 8 slots of
// 16-byte keys and values); strings point into the encoding.
func sizeOf(v any) int64 {
	switch t := v.(type) {
	case map[string]any:
		n := int64(48 + 33*max(8, len(t)+len(t)/7))
		for _, e := range t {
			n += sizeOf(e)
		}
		return n
	case []any:
		n := int64(24 + 16*len(t))
		for _, e := range t {
			n += sizeOf(e)
		}
		return n
	}
	return 16
}

func encodeValue(buf []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(buf, tagNull), true
	case bool:
		if t {
			return append(buf, tagTrue), true
		}
		return append(buf, tagFalse), true
	case int64:
		return binary.AppendVarint(append(buf, tagInt), t), true
	case float64:
		return binary.LittleEndian.AppendUint64(append(buf, tagFloat), math.Float64bits(t)), true
	case string:
		return append(binary.AppendUvarint(append(buf, tagString), uint64(len(t))), t...), true
	case map[string]any:
		buf = binary.AppendUvarint(append(buf, tagMap), uint64(len(t)))
		for k, e := range t {
			buf = append(binary.AppendUvarint(buf, uint64(len(k))), k...)
			var ok bool
			if buf, ok = encodeValue(buf, e); !ok {
				return buf, false
			}
		}
		return buf, true
	case []any:
		buf = binary.AppendUvarint(append(buf, tagList), uint64(len(t)))
		for _, e := range t {
			var ok bool
			if buf, ok = encodeValue(buf, e); !ok {
				return buf, false
			}
		}
		return buf, true
	}
	return buf, false
}

// decodeObject decodes what encodeObject wrote, with the interner's table as it was then (or
// since: it only grows).
func decodeObject(b []byte, table []any) map[string]any {
	v, _ := decodeValue(b, table)
	return v.(map[string]any)
}

// decodeValue decodes one value and returns the bytes after it. The input is the cache's
// own encoding: it is trusted.
func decodeValue(b []byte, table []any) (any, []byte) {
	tag, b := b[0], b[1:]
	switch tag {
	case tagShared:
		i, w := binary.Uvarint(b)
		return table[i], b[w:]
	case tagNull:
		return nil, b
	case tagFalse:
		return false, b
	case tagTrue:
		return true, b
	case tagInt:
		n, w := binary.Varint(b)
		return n, b[w:]
	case tagFloat:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
	case tagString:
		s, rest := decodeString(b)
		return s, rest
	case tagMap:
		n, w := binary.Uvarint(b)
		b = b[w:]
		m := make(map[string]any, n)
		for i := uint64(0); i < n; i++ {
			var k string
			var v any
			k, b = decodeString(b)
			v, b = decodeValue(b, table)
			m[k] = v
		}
		return m, b
	default: // tagList
		n, w := binary.Uvarint(b)
		b = b[w:]
		l := make([]any, n)
		for i := range l {
			l[i], b = decodeValue(b, table)
		}
		return l, b
	}
}

func decodeString(b []byte) (string, []byte) {
	n, w := binary.Uvarint(b)
	b = b[w:]
	if n == 0 {
		return "", b
	}
	return unsafe.String(&b[0], int(n)), b[n:]
}

// headKey reports whether k is a field of an object's head, which a deferred render decodes
// (Options.Deferred): what the checks across files and the engine read of every object. The
// other fields are its body.
func headKey(k string) bool { return k == "apiVersion" || k == "kind" || k == "metadata" }

// decodeHead decodes the head of an object that encodeObject wrote (headKey), and reports
// whether it skipped a body.
func decodeHead(b []byte, table []any) (head map[string]any, body bool) {
	head = make(map[string]any, 3)
	eachField(b, func(k string, v []byte) {
		if headKey(k) {
			head[k], _ = decodeValue(v, table)
		} else {
			body = true
		}
	})
	return head, body
}

// decodeBody decodes the fields of an object that decodeHead skipped into obj.
func decodeBody(b []byte, table []any, obj map[string]any) {
	eachField(b, func(k string, v []byte) {
		if !headKey(k) {
			obj[k], _ = decodeValue(v, table)
		}
	})
}

// eachField calls f with the key and the encoded value of each field of the map that b starts
// with, in the encoding's order, and returns the bytes after the map.
func eachField(b []byte, f func(k string, v []byte)) []byte {
	n, w := binary.Uvarint(b[1:]) // b[0] is tagMap
	b = b[1+w:]
	for i := uint64(0); i < n; i++ {
		var k string
		k, b = decodeString(b)
		f(k, b)
		b = skipValue(b)
	}
	return b
}

// skipValue returns the bytes after the value that b starts with, decoding nothing.
func skipValue(b []byte) []byte {
	tag, b := b[0], b[1:]
	switch tag {
	case tagShared:
		_, w := binary.Uvarint(b)
		return b[w:]
	case tagNull, tagFalse, tagTrue:
		return b
	case tagInt:
		_, w := binary.Varint(b)
		return b[w:]
	case tagFloat:
		return b[8:]
	case tagString:
		n, w := binary.Uvarint(b)
		return b[uint64(w)+n:]
	case tagMap:
		n, w := binary.Uvarint(b)
		b = b[w:]
		for i := uint64(0); i < n; i++ {
			k, w := binary.Uvarint(b)
			b = skipValue(b[uint64(w)+k:])
		}
		return b
	default: // tagList
		n, w := binary.Uvarint(b)
		b = b[w:]
		for i := uint64(0); i < n; i++ {
			b = skipValue(b)
		}
		return b
	}
}
