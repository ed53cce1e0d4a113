package object

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the bytes json.Marshal gives for v, a value of an unstructured object
// (maps of string keys, lists, strings, numbers, booleans, nil), to buf: byte for byte the
// same (keys sorted, <, > and & escaped, floats as encoding/json writes them), without its
// reflection — the plan hashes every desired object, and the applied-hash annotations of live
// objects must keep matching. Values of other types are marshalled by encoding/json.
func AppendJSON(buf []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, t), nil
	case string:
		return appendJSONString(buf, t), nil
	case int64:
		return strconv.AppendInt(buf, t, 10), nil
	case int:
		return strconv.AppendInt(buf, int64(t), 10), nil
	case int32:
		return strconv.AppendInt(buf, int64(t), 10), nil
	case float64:
		return appendJSONFloat(buf, t)
	case map[string]any:
		if t == nil {
			return append(buf, "null"...), nil
		}
		var small [16]string
		keys := small[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(appendJSONString(buf, k), ':')
			var err error
			if buf, err = AppendJSON(buf, t[k]); err != nil {
				return buf, err
			}
		}
		return append(buf, '}'), nil
	case []any:
		if t == nil {
			return append(buf, "null"...), nil
		}
		buf = append(buf, '[')
		for i, e := range t {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = AppendJSON(buf, e); err != nil {
				return buf, err
			}
		}
		return append(buf, ']'), nil
	}
	b, err := json.Marshal(v)
	return append(buf, b...), err
}

// AppendJSONString appends s as AppendJSON writes a string.
func AppendJSONString(buf []byte, s string) []byte { return appendJSONString(buf, s) }

// appendJSONFloat writes a float as encoding/json does (ES6 number form: exponent below 1e-6
// and from 1e21, without padding).
func appendJSONFloat(buf []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		_, err := json.Marshal(f) // its error
		return buf, err
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if n := len(buf); format == 'e' && n-start >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
		buf[n-2] = buf[n-1] // e-09 → e-9
		buf = buf[:n-1]
	}
	return buf, nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes a string as encoding/json does with HTML escaping (json.Marshal's).
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			buf = append(append(buf, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			buf = append(append(buf, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(buf, s[start:]...), '"')
}
