package render

import (
	"testing"
	"unsafe"
)

// After parsing, a document keeps the positions of its fields in a sorted slice, not a map;
// At and Has answer as the map did (the value's position), renamed blocks included.
func TestFieldPositionsAfterParsing(t *testing.T) {
	ds := &diagnostics{}
	docs := parseFile("a.yaml", []byte("kind: training\nversion: v0.1\njob: {name: x}\nenvironment:\n  image: i\n  command: [run]\nresources:\n  gpu: 1\n---\nkind: resource\nversion: v0.1\npool: {name: p}\nnodes: {n1: {}}\n"), ds)
	if len(ds.list) != 0 || len(docs) != 2 {
		t.Fatalf("%d documents, diagnostics %v", len(docs), ds.list)
	}
	train, pool := docs[0], docs[1]
	if train.pos != nil || pool.pos != nil || len(train.fields) == 0 {
		t.Fatalf("positions not compacted: %d in the map, %d in the slice", len(train.pos), len(train.fields))
	}
	for _, c := range []struct {
		doc        *Document
		field      string
		line, col  int
		wantExists bool
	}{
		{train, "resources.gpu", 8, 8, true},
		{train, "environment.image", 5, 10, true},
		{train, "job.name", 3, 13, true},
		{train, "resources.cpu", 0, 0, false},
		{pool, "metadata.name", 12, 14, true}, // written as pool.name
	} {
		if got := c.doc.Has(c.field); got != c.wantExists {
			t.Errorf("Has(%q) = %v", c.field, got)
		}
		want := c.doc.Pos
		if c.wantExists {
			want = Pos{Line: c.line, Column: c.col}
		}
		if got := c.doc.At(c.field); got != want {
			t.Errorf("At(%q) = %+v, want %+v", c.field, got, want)
		}
	}
}

// The names of the fields are interned: two files that write resources.gpu share one copy of
// the name (the render cache holds every file's positions).
func TestFieldNamesAreShared(t *testing.T) {
	file := []byte("kind: training\nversion: v0.1\njob: {name: x}\nenvironment: {image: i, command: [run]}\nresources: {gpu: 1}\n")
	ds := &diagnostics{}
	a, b := parseFile("a.yaml", file, ds), parseFile("b.yaml", file, ds)
	if len(a) != 1 || len(b) != 1 || len(ds.list) != 0 {
		t.Fatalf("%d and %d documents, diagnostics %v", len(a), len(b), ds.list)
	}
	shared := 0
	for i, f := range a[0].fields {
		g := b[0].fields[i]
		if f.field != g.field {
			t.Fatalf("field %d: %q and %q", i, f.field, g.field)
		}
		if unsafe.StringData(f.field) == unsafe.StringData(g.field) {
			shared++
		}
	}
	if shared != len(a[0].fields) || shared == 0 {
		t.Errorf("%d of %d field names shared by the two documents", shared, len(a[0].fields))
	}
}
