package object

import (
	"encoding/base64"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// ContainsTyped is Contains of desired and live, live given as the typed object it was decoded
// into (from protobuf): the same answer as Contains(desired, u) where u is
// runtime.DefaultUnstructuredConverter.ToUnstructured(live) with live's kind set, without
// converting live. Only the fields desired sets are read (by their JSON names, with the
// converter's rules: omitempty and omitzero fields left out when empty, inline structs
// merged, custom converters such as resource.Quantity's used): converting a whole Job costs
// more than a no-op plan may spend on it.
func ContainsTyped(desired *unstructured.Unstructured, live runtime.Object) bool {
	if live == nil {
		return false
	}
	v := reflect.ValueOf(live)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	return containsTyped(desired.Object, v.Elem(), "")
}

// containsTyped is contains of desired and the unstructured form of live; parent is the key
// under which desired sits.
func containsTyped(desired any, live reflect.Value, parent string) bool {
	if u, custom := converted(live); custom {
		return contains(desired, u, parent)
	}
	switch d := desired.(type) {
	case map[string]any:
		for k, dv := range d {
			lv, ok := member(live, k)
			if !ok {
				return false
			}
			switch dv.(type) {
			case map[string]any, []any:
				if !containsTyped(dv, lv, k) {
					return false
				}
			default:
				l, ok := scalarOf(lv)
				if !ok || !scalarEqual(dv, l, quantityParents[parent]) {
					return false
				}
			}
		}
		return true
	case []any:
		l := deref(live)
		if l.Kind() != reflect.Slice || l.IsNil() || l.Type().Elem().Kind() == reflect.Uint8 || l.Len() != len(d) {
			return false // nil, not a list, or bytes (a base64 string)
		}
		for i := range d {
			if !containsTyped(d[i], l.Index(i), "") {
				return false
			}
		}
		return true
	default:
		l, ok := scalarOf(live)
		return ok && scalarEqual(desired, l, false)
	}
}

// converted returns the unstructured form of a value whose type converts itself (a quantity,
// a time, an int-or-string, a raw extension), and whether it does. An invalid value (a nil
// pointer or interface on the way) converts to nil.
func converted(v reflect.Value) (any, bool) {
	if !v.IsValid() {
		return nil, true
	}
	e := value.TypeReflectEntryOf(v.Type())
	if !e.CanConvertToUnstructured() {
		return nil, false
	}
	u, err := e.ToUnstructured(v)
	if err != nil {
		return err, true // equal to nothing desired holds
	}
	return u, true
}

// deref follows pointers and interfaces; a nil one gives the invalid value.
func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		if _, custom := converted(v); custom {
			return v
		}
		v = v.Elem()
	}
	return v
}

// scalarOf is the unstructured form of a value that desired holds as a scalar: what the
// converter writes for it (strings, booleans, int64, float64, nil; a custom converter's value;
// a nested object or list as such, which equals no scalar).
func scalarOf(v reflect.Value) (any, bool) {
	v = deref(v) // stops at a value that converts itself
	if u, custom := converted(v); custom {
		return u, true
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	case reflect.Map, reflect.Slice:
		if v.IsNil() {
			return nil, true
		}
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return base64.StdEncoding.EncodeToString(v.Bytes()), true // as JSON writes bytes
		}
	}
	return notScalar{}, true // an object or a list
}

// notScalar stands for an object or a list where desired holds a scalar: equal to none.
type notScalar struct{}

// member returns the value under key k of live's unstructured form, and whether it has one.
func member(live reflect.Value, k string) (reflect.Value, bool) {
	v := deref(live)
	switch v.Kind() {
	case reflect.Map:
		if v.IsNil() || v.Type().Key().Kind() != reflect.String {
			return reflect.Value{}, false
		}
		mv := v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key()))
		return mv, mv.IsValid()
	case reflect.Struct:
		f, ok := fieldsOf(v.Type())[k]
		if !ok {
			return reflect.Value{}, false
		}
		for i, step := range f.path {
			if i > 0 { // an inline struct reached through a pointer
				if v.Kind() == reflect.Pointer {
					if v.IsNil() {
						return reflect.Value{}, false
					}
					v = v.Elem()
				}
			}
			v = v.Field(step.index)
			if step.omitted(v) {
				return reflect.Value{}, false
			}
		}
		return v, true
	}
	return reflect.Value{}, false
}

// fieldStep is one field on the way to a JSON member of a struct, with what leaves it out.
type fieldStep struct {
	index     int
	omitempty bool
	omitzero  func(reflect.Value) bool
}

func (s fieldStep) omitted(v reflect.Value) bool {
	return (s.omitempty && isEmpty(v)) || (s.omitzero != nil && s.omitzero(v))
}

// jsonField is a JSON member of a struct: the fields leading to it (more than one through
// inline structs).
type jsonField struct{ path []fieldStep }

var structFields sync.Map // reflect.Type → map[string]jsonField

// fieldsOf returns the JSON members of a struct type as the unstructured converter names them.
func fieldsOf(t reflect.Type) map[string]jsonField {
	if f, ok := structFields.Load(t); ok {
		return f.(map[string]jsonField)
	}
	out := map[string]jsonField{}
	addFields(out, t, nil)
	structFields.Store(t, out)
	return out
}

func addFields(out map[string]jsonField, t reflect.Type, prefix []fieldStep) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue // API types have none; the converter could not read one either
		}
		name, step := sf.Name, fieldStep{index: i}
		tag, hasTag := sf.Tag.Lookup("json")
		if !hasTag || tag == "" {
			if sf.Anonymous {
				name = ""
			}
		} else {
			items := strings.Split(tag, ",")
			name = items[0]
			if name == "" && !sf.Anonymous {
				name = sf.Name
			}
			for _, o := range items[1:] {
				switch o {
				case "omitempty":
					step.omitempty = true
				case "omitzero":
					step.omitzero = value.OmitZeroFunc(sf.Type)
				}
			}
		}
		path := append(append([]fieldStep(nil), prefix...), step)
		switch {
		case name == "-":
		case name == "":
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(out, ft, path)
			}
		default:
			out[name] = jsonField{path: path}
		}
	}
}

// isEmpty is what omitempty leaves out, as the unstructured converter decides it.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Map, reflect.Slice:
		return v.IsNil() || v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}
