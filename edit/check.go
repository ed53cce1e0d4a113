package edit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuctl/gpuctl/internal/memfs"
	"github.com/gpuctl/gpuctl/render"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// check renders the repository with the changes made, in memory, and returns the diagnostics
// that the changes bring: those that the repository as it is (base) does not have. An edit
// never makes the repository worse; it does not have to make a broken one valid. Diagnostics
// are compared without their positions (an edit moves the lines below it), and their files
// are made relative to the Root, with names given by rename (the input files of a create).
// It returns the render too.
func (r *Repo) check(base *render.Result, changes []Change, rename map[string]string) ([]*render.Diagnostic, *render.Result, error) {
	mem, err := r.overlay(changes)
	if err != nil {
		return nil, nil, err
	}
	res, err := r.render(mem)
	if res == nil {
		return nil, nil, err
	}
	had := map[string]int{}
	for _, d := range base.Diagnostics {
		had[diagKey(d)]++
	}
	var out []*render.Diagnostic
	for _, d := range res.Diagnostics {
		if k := diagKey(d); had[k] > 0 {
			had[k]--
			continue
		}
		c := *d
		c.File = r.rel(c.File)
		if name, ok := rename[c.File]; ok {
			c.File = name
		}
		out = append(out, &c)
	}
	return out, res, nil
}

// review runs the Repo's Review, when set, over the renders of the tree before the changes
// (base) and with them (after). A render with errors gives no objects (another team's broken
// file, which the edit does not make worse): its files with errors are then left out and the
// rest rendered again, as a review renders each side, so that the checks still see the edit.
func (r *Repo) review(base, after *render.Result, changes []Change) error {
	if r.Review == nil {
		return nil
	}
	b, err := r.withoutErrors(base, nil)
	if err != nil {
		return err
	}
	a, err := r.withoutErrors(after, changes)
	if err != nil {
		return err
	}
	return r.Review(b, a)
}

// withoutErrors is res, the render of the tree with changes, or when it has errors the render
// of the tree with changes and without the files that have them.
func (r *Repo) withoutErrors(res *render.Result, changes []Change) (*render.Result, error) {
	errs := res.Errors()
	if len(errs) == 0 {
		return res, nil
	}
	out := slices.Clone(changes)
	left := map[string]bool{}
	for _, d := range errs {
		if rel := r.rel(d.File); d.File != "" && !left[rel] && rel != "." && !strings.HasPrefix(rel, "../") {
			left[rel] = true
			out = append(out, Change{Path: rel, Action: Deleted})
		}
	}
	mem, err := r.overlay(out)
	if err != nil {
		return nil, err
	}
	again, err := r.render(mem)
	if again == nil {
		return nil, err
	}
	return again, nil
}

// diagKey identifies a diagnostic without its position.
func diagKey(d *render.Diagnostic) string {
	return strings.Join([]string{string(d.Severity), d.File, d.Field, d.Message, d.Hint}, "\x00")
}

// overlay copies the repository's files into memory (any name a file may have) and makes the
// changes there. Directories whose name starts with a dot (.git) are left out, as render skips
// them; so are symbolic links (render skips them too) and files too large for render to read.
func (r *Repo) overlay(changes []Change) (filesys.FileSystem, error) {
	mem := memfs.New()
	if err := mem.MkdirAll(r.Root); err != nil {
		return nil, err
	}
	err := r.FS.Walk(r.Root, func(p string, info os.FileInfo, err error) error {
		switch {
		case err != nil:
			return nil // render reports what it cannot read
		case info.IsDir():
			if p != r.Root && strings.HasPrefix(info.Name(), ".") {
				return filepath.SkipDir
			}
			return mem.MkdirAll(p)
		case !info.Mode().IsRegular() || info.Size() > render.MaxFileSize:
			return nil
		}
		data, err := r.FS.ReadFile(p)
		if err != nil {
			return nil
		}
		return mem.WriteFile(p, data)
	})
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		abs := filepath.Join(r.Root, filepath.FromSlash(c.Path))
		if c.Action == Deleted {
			if err := mem.RemoveAll(abs); err != nil {
				return nil, err
			}
			continue
		}
		if err := mem.MkdirAll(filepath.Dir(abs)); err != nil {
			return nil, err
		}
		if err := mem.WriteFile(abs, c.New); err != nil {
			return nil, err
		}
	}
	return mem, nil
}

// split separates errors from warnings.
func split(diags []*render.Diagnostic) (errs, warnings []*render.Diagnostic) {
	for _, d := range diags {
		if d.Severity == render.SeverityError {
			errs = append(errs, d)
		} else {
			warnings = append(warnings, d)
		}
	}
	return errs, warnings
}
