package managedfields

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Owner is one managedFields entry: a field manager, how it wrote (Apply or Update), when, and
// the fields it owns as dotted paths of the object it was read from (list items by index, as
// in spec.template.spec.containers[0].image).
type Owner struct {
	Manager     string
	Operation   string
	Subresource string
	Time        *time.Time
	Paths       map[string]bool
}

// Owners reads the managedFields of an object into owners, resolving the keyed list items of
// the field sets (k:{"name":"x"}, v:..., i:N) against obj.
func Owners(entries []metav1.ManagedFieldsEntry, obj map[string]any) []Owner {
	out := make([]Owner, 0, len(entries))
	for _, e := range entries {
		o := Owner{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource, Paths: map[string]bool{}}
		if e.Time != nil {
			t := e.Time.UTC()
			o.Time = &t
		}
		if e.FieldsV1 != nil {
			var set map[string]any
			if json.Unmarshal(e.FieldsV1.Raw, &set) == nil {
				walk(set, obj, "", o.Paths)
			}
		}
		out = append(out, o)
	}
	return out
}

// walk adds the paths of a field set, whose object value at path is value.
func walk(set map[string]any, value any, path string, out map[string]bool) {
	for k, sub := range set {
		if k == "." {
			out[path] = true
			continue
		}
		child, _ := sub.(map[string]any)
		prefix, rest, ok := strings.Cut(k, ":")
		if !ok {
			continue
		}
		var p string
		var v any
		switch prefix {
		case "f":
			p = join(path, rest)
			if m, ok := value.(map[string]any); ok {
				v = m[rest]
			}
		case "k", "v", "i":
			list, _ := value.([]any)
			i := index(prefix, rest, list)
			if i < 0 {
				continue // an item the object no longer has
			}
			p, v = path+"["+strconv.Itoa(i)+"]", list[i]
		default:
			continue
		}
		if len(child) == 0 {
			out[p] = true // a leaf; an inner node is owned only through its "." member
			continue
		}
		walk(child, v, p, out)
	}
}

// index finds the list item that a k:, v: or i: path element names, or -1.
func index(prefix, rest string, list []any) int {
	switch prefix {
	case "i":
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= len(list) {
			return -1
		}
		return i
	case "v":
		var want any
		if json.Unmarshal([]byte(rest), &want) != nil {
			return -1
		}
		for i, item := range list {
			if same(item, want) {
				return i
			}
		}
	case "k":
		var key map[string]any
		if json.Unmarshal([]byte(rest), &key) != nil {
			return -1
		}
		for i, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			match := true
			for kf, kv := range key {
				if !same(m[kf], kv) {
					match = false
					break
				}
			}
			if match {
				return i
			}
		}
	}
	return -1
}

// same compares a live value with one decoded from a field set (numbers as float64 there).
func same(live, set any) bool {
	if reflect.DeepEqual(live, set) {
		return true
	}
	return fmt.Sprint(live) == fmt.Sprint(set)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// OwnerOf returns the owner of a field among owners, leaving out the managers in skip: the
// one owning the path itself, else the one owning its nearest parent. ok is false when no
// other manager owns it or a parent (a removed field).
func OwnerOf(owners []Owner, path string, skip func(Owner) bool) (Owner, bool) {
	for p := path; p != ""; p = parent(p) {
		for _, o := range owners {
			if !skip(o) && o.Paths[p] {
				return o, true
			}
		}
	}
	return Owner{}, false
}

// Latest returns the owner that wrote last, leaving out the managers in skip.
func Latest(owners []Owner, skip func(Owner) bool) (Owner, bool) {
	var best Owner
	found := false
	for _, o := range owners {
		if skip(o) || o.Time == nil {
			continue
		}
		if !found || o.Time.After(*best.Time) {
			best, found = o, true
		}
	}
	return best, found
}

// parent drops the last element of a dotted path: a.b[0].c → a.b[0] → a.b → a → "".
func parent(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}
