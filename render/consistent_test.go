package render_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

// Result.Consistent says that the objects are those of the files as the caller hashed them
// (Options.Digest): the daemon renders a revision while its file events settle, and uses
// that render only when it is. Each way a render can read something else makes it false.
func TestResultConsistent(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {a: b}\n"
	sums := map[string][sha256.Size]byte{}
	hashAll := func(dir string) { // what a source's fetch does
		clear(sums)
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data, _ := os.ReadFile(p)
				sums[p] = sha256.Sum256(data)
			}
			return nil
		})
	}
	digest := func(abs string) ([sha256.Size]byte, bool) { s, ok := sums[abs]; return s, ok }
	for name, c := range map[string]struct {
		change     func(dir string) // after the hashing, before the render
		digest     bool
		cold       bool // no render before: the cache is empty
		consistent bool
	}{
		"files as hashed": {digest: true, consistent: true},
		"no digests":      {consistent: false},
		"a file written since it was hashed, read": {digest: true, cold: true, change: func(dir string) { write(t, dir, "teams/alice/a.yaml", fmt.Sprintf(cm, "changed")) }},
		// The content as hashed is in the cache: the render uses it, and does not read the file.
		"a file written since it was hashed, cached": {digest: true, consistent: true, change: func(dir string) { write(t, dir, "teams/alice/a.yaml", fmt.Sprintf(cm, "changed")) }},
		"a file added since the hashing":             {digest: true, change: func(dir string) { write(t, dir, "teams/alice/new.yaml", fmt.Sprintf(cm, "new")) }},
		"the configuration written since":            {digest: true, change: func(dir string) { write(t, dir, ".gpuctl.yaml", tenantConfig+"# edited\n") }},
		"a kustomization as hashed (kustomize reads through the render)": {digest: true, consistent: true, change: func(dir string) {
			write(t, dir, "base/kustomization.yaml", "resources: [cm.yaml]\npatches: [{path: patch.yaml}]\n")
			write(t, dir, "base/cm.yaml", fmt.Sprintf(cm, "k"))
			write(t, dir, "base/patch.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\ndata: {c: d}\n")
			hashAll(dir)
		}},
		"a kustomization's patch written since the hashing": {digest: true, change: func(dir string) {
			write(t, dir, "base/kustomization.yaml", "resources: [cm.yaml]\npatches: [{path: patch.yaml}]\n")
			write(t, dir, "base/cm.yaml", fmt.Sprintf(cm, "k"))
			write(t, dir, "base/patch.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\ndata: {c: d}\n")
			hashAll(dir)
			write(t, dir, "base/patch.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\ndata: {c: changed}\n")
		}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := diskTree(t, map[string]string{"teams/alice/a.yaml": fmt.Sprintf(cm, "a"), "teams/bob/b.yaml": fmt.Sprintf(cm, "b")})
			hashAll(dir)
			cache := render.NewCache(0)
			opts := render.Options{Cache: cache}
			if c.digest {
				opts.Digest = digest
			}
			if !c.cold {
				if _, err := render.New(opts).RenderContext(t.Context(), diskFS(), dir); err != nil { // fills the cache
					t.Fatal(err)
				}
			}
			if c.change != nil {
				c.change(dir)
			}
			res, err := render.New(opts).RenderContext(t.Context(), diskFS(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if res.Consistent != c.consistent {
				t.Errorf("Consistent = %v, want %v", res.Consistent, c.consistent)
			}
		})
	}
}

// write creates or replaces dir/rel.
func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
