package object

import (
	"encoding/json"
	"testing"
)

func TestDisplay(t *testing.T) {
	cases := map[string]struct {
		v    any
		want string
	}{
		"missing":                 {nil, "<none>"},
		"string as it is":         {"a <b> & c", "a <b> & c"},
		"empty string":            {"", ""},
		"integer":                 {int64(3), "3"},
		"float written as JSON":   {float64(1000000), "1000000"},
		"fraction":                {0.5, "0.5"},
		"boolean":                 {true, "true"},
		"json.Number":             {json.Number("12"), "12"},
		"map: JSON, keys sorted":  {map[string]any{"nvidia.com/gpu": int64(2), "memory": "64Gi"}, `{"memory":"64Gi","nvidia.com/gpu":2}`},
		"list":                    {[]any{"a", int64(1), nil}, `["a",1,null]`},
		"no HTML escaping":        {map[string]any{"k": "<x>&"}, `{"k":"<x>&"}`},
		"nested map in a list":    {[]any{map[string]any{"b": "2", "a": "1"}}, `[{"a":"1","b":"2"}]`},
		"empty map":               {map[string]any{}, "{}"},
		"a Go map of other types": {map[string]string{"z": "1", "a": "2"}, `{"a":"2","z":"1"}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Display(tc.v); got != tc.want {
				t.Errorf("Display(%#v) = %q, want %q", tc.v, got, tc.want)
			}
		})
	}
}
