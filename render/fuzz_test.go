package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// FuzzParseFile renders arbitrary bytes as one file: it must never panic, and every
// diagnostic must name the file. `make test` runs the seed corpus (examples/, the seed
// documents, testdata/fuzz); `make fuzz` searches for 60 s.
func FuzzParseFile(f *testing.F) {
	for _, glob := range []string{"../examples/*/*.yaml", "../examples/*/*/*.yaml", "testdata/seeds/*/*.yaml", "testdata/cases/*/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte(training))
	f.Add([]byte("kind: quota\nversion: v0.1\nmetadata: {name: q}\nnamespace: {a: {gpu: 1, cpu: 2, memory: 1Gi}}\n"))
	f.Add([]byte("kind: resource\nversion: v0.1\npool: {name: p}\nnodes: {n: {gpuType: A100}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, diags := render.ParseFile("f.yaml", data)
		for _, d := range diags {
			if d.File != "f.yaml" || d.Line < 0 || d.Message == "" {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		for _, d := range docs {
			if d.File != "f.yaml" {
				t.Fatalf("document names file %q", d.File)
			}
		}
		fs := filesys.MakeFsInMemory()
		if err := fs.WriteFile("/r/f.yaml", data); err != nil {
			t.Fatal(err)
		}
		res, err := render.New(render.Options{}).Render(fs, "/r")
		if err != nil && res != nil && len(res.Objects) > 0 {
			t.Fatalf("an invalid file rendered %d objects", len(res.Objects))
		}
		if err != nil && !strings.Contains(err.Error(), "f.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
