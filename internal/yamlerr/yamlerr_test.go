package yamlerr

import (
	"bytes"
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"
)

type doc struct {
	Name  string `yaml:"name"`
	Count int    `yaml:"count"`
}

func TestProblems(t *testing.T) {
	dec := yaml.NewDecoder(bytes.NewReader([]byte("name: a\ncount: many\nextra: 1\n")))
	dec.KnownFields(true)
	var d doc
	ps := Problems(dec.Decode(&d), map[string]string{"yamlerr.doc": "the file"})
	want := []Problem{
		{2, "cannot unmarshal !!str `many` into int"},
		{3, "field extra not found in the file"},
	}
	if len(ps) != len(want) {
		t.Fatalf("problems %+v, want %+v", ps, want)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("problem %d: %+v, want %+v", i, ps[i], want[i])
		}
	}
	syntax := yaml.Unmarshal([]byte("a: [\n"), &d)
	if ps := Problems(syntax, nil); len(ps) != 1 || ps[0].Line == 0 {
		t.Errorf("a syntax error: %+v (%v)", ps, syntax)
	}
}

func TestErrors(t *testing.T) {
	dec := yaml.NewDecoder(bytes.NewReader([]byte("name: a\ncount: many\n")))
	dec.KnownFields(true)
	var d doc
	err := Errors("f.yaml", dec.Decode(&d), map[string]string{"yamlerr.doc": "the file"})
	if want := "f.yaml:2: cannot unmarshal !!str `many` into int"; err == nil || err.Error() != want {
		t.Errorf("Errors = %v, want %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.File != "f.yaml" {
		t.Errorf("Errors holds %+v, want an *Error of f.yaml line 2", e)
	}
	if got := (&Error{File: "f.yaml", Message: "empty"}).Error(); got != "f.yaml: empty" {
		t.Errorf("an Error without a line = %q, want %q", got, "f.yaml: empty")
	}
}
