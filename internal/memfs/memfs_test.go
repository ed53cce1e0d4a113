package memfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
)

func TestAnyNameGitTakes(t *testing.T) {
	fsys := New()
	names := []string{"/r/teams/bob/notes (old).md", "/r/teams/bob/résumé ✓.yaml", "/r/a..b/c+d@e.yaml", "/r/x/#1 [draft]{a}.yml"}
	for _, n := range names {
		if err := fsys.WriteFile(n, []byte(n)); err != nil {
			t.Fatalf("WriteFile(%q) = %v", n, err)
		}
	}
	for _, n := range names {
		data, err := fsys.ReadFile(n)
		if err != nil || string(data) != n {
			t.Errorf("ReadFile(%q) = %q, %v", n, data, err)
		}
		dir, file, err := fsys.CleanedAbs(n)
		if err != nil || string(dir) != filepath.Dir(n) || file != filepath.Base(n) {
			t.Errorf("CleanedAbs(%q) = %q, %q, %v", n, dir, file, err)
		}
	}
	if got, err := fsys.ReadDir("/r/teams/bob"); err != nil || !slices.Equal(got, []string{"notes (old).md", "résumé ✓.yaml"}) {
		t.Errorf("ReadDir = %q, %v", got, err)
	}
}

func TestWalk(t *testing.T) {
	fsys := New()
	for _, n := range []string{"/r/b/x.yaml", "/r/a/y.yaml", "/r/a/z.yaml", "/r/.git/config", "/r/c.yaml"} {
		if err := fsys.WriteFile(n, []byte("k: v\n")); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	err := fsys.Walk("/r", func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		seen = append(seen, p)
		switch {
		case info.IsDir() && info.Name() == ".git":
			return filepath.SkipDir
		case p == "/r/a/y.yaml": // the rest of a/
			return filepath.SkipDir
		case info.IsDir() != (info.Mode()&fs.ModeDir != 0) || !info.IsDir() && !info.Mode().IsRegular():
			t.Errorf("%s: mode %v, IsDir %v", p, info.Mode(), info.IsDir())
		}
		return nil
	})
	want := []string{"/r", "/r/.git", "/r/a", "/r/a/y.yaml", "/r/b", "/r/b/x.yaml", "/r/c.yaml"}
	if err != nil || !slices.Equal(seen, want) {
		t.Errorf("Walk = %q, %v; want %q", seen, err, want)
	}
	err = fsys.Walk("/nowhere", func(_ string, _ os.FileInfo, err error) error { return err })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Walk of a missing directory = %v, want ErrNotExist", err)
	}
	if got, _ := fsys.Glob("/r/*/*.yaml"); !slices.Equal(got, []string{"/r/a/y.yaml", "/r/a/z.yaml", "/r/b/x.yaml"}) {
		t.Errorf("Glob = %q", got)
	}
}

func TestFilesAndDirectories(t *testing.T) {
	fsys := New()
	if err := fsys.MkdirAll("/r/d"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile("/r/f", []byte("one")); err != nil {
		t.Fatal(err)
	}
	switch {
	case !fsys.IsDir("/r/d") || fsys.IsDir("/r/f") || !fsys.Exists("/r/f") || fsys.Exists("/r/g"):
		t.Error("IsDir or Exists is wrong")
	case fsys.WriteFile("/r/d", nil) == nil:
		t.Error("WriteFile over a directory succeeded")
	case fsys.MkdirAll("/r/f/sub") == nil:
		t.Error("MkdirAll below a file succeeded")
	}
	if _, err := fsys.ReadFile("/r/g"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file = %v, want ErrNotExist", err)
	}
	f, err := fsys.Open("/r/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("t")); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(f)
	if string(rest) != "ne" || f.Close() != nil {
		t.Errorf("read after a write = %q", rest)
	}
	if data, _ := fsys.ReadFile("r/f"); string(data) != "tne" {
		t.Errorf("content = %q, want tne (and a relative path read from the root)", data)
	}
	if err := fsys.RemoveAll("/r"); err != nil || fsys.Exists("/r/f") || fsys.RemoveAll("/") == nil {
		t.Errorf("RemoveAll = %v; the root must stay", err)
	}
}

// TestKustomize builds a kustomization whose directories and files have names that kyaml's
// own in-memory filesystem refuses.
func TestKustomize(t *testing.T) {
	fsys := New()
	files := map[string]string{
		"/r/kustomization.yaml":        "resources:\n- my app\nconfigMapGenerator:\n- name: notes\n  files:\n  - notes.md=notes (old).md\n",
		"/r/notes (old).md":            "hello\n",
		"/r/my app/kustomization.yaml": "resources:\n- cm (1).yaml\n",
		"/r/my app/cm (1).yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
	}
	for n, c := range files {
		if err := fsys.WriteFile(n, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/r")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Resources()); got != 2 {
		t.Errorf("%d resources, want 2 (the ConfigMap and the generated one)", got)
	}
}
