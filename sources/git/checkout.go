package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/gpuctl/gpuctl/internal/humanize"
)

// treeDir is the directory of the working directory that holds the checked-out tree of the
// last good revision: Revision.Dir is there, or in Options.Path below it.
const treeDir = "tree"

// openFile creates a file of a checkout; a test makes it fail, as a full disk does.
var openFile = os.OpenFile

// checkout checks the tree of commit out into Dir/tree: it writes it into a new directory of
// Dir, then exchanges the two (replaceDir), and removes the previous tree in the background.
// The whole tree is written, not only Options.Path, so that a render finds the .gpuctl.yaml
// above its directory, with an empty .git directory at its top, where that search stops. Each
// file is written from the object store (mode 0644 or 0755, a symlink as a symlink, a
// submodule as an empty directory, as go-git checks them out), or hard-linked to the file of
// Dir/tree when the tree of good (the last good revision, whose tree it holds; "" for none)
// has it unchanged (the tree is the Source's: nothing else may change its files in place).
// ctx is honoured between files. On failure the new directory is removed,
// and Dir/tree is as it was. The clone's HEAD is then detached at commit, for whoever looks
// into the working directory.
func (s *Source) checkout(ctx context.Context, repo *gogit.Repository, commit *object.Commit, good string) error {
	next, err := s.writeCheckout(ctx, repo.Storer, commit, good)
	if err == nil {
		if err = replaceDir(next, filepath.Join(s.dir, treeDir)); err != nil {
			s.removeTree(next)
		}
	}
	if err != nil {
		return fmt.Errorf("git: checkout %s@%s: %w", s.remote.display, humanize.Revision(commit.Hash.String()), err)
	}
	s.removeTree(next) // the previous tree, after the exchange
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, commit.Hash)); err != nil {
		s.log.Warn("cannot point the clone's HEAD at the commit checked out", "commit", commit.Hash.String(), "err", err)
	}
	return nil
}

// writeCheckout writes the tree of commit into a new directory of Dir and returns it.
func (s *Source) writeCheckout(ctx context.Context, st storer.EncodedObjectStorer, commit *object.Commit, good string) (string, error) {
	tree, err := commit.Tree()
	if err != nil {
		return "", err
	}
	var before *object.Tree
	if good != "" {
		if c, err := object.GetCommit(st, plumbing.NewHash(good)); err == nil {
			before, _ = c.Tree()
		}
	}
	dir, err := os.MkdirTemp(s.dir, "checkout-"+humanize.Revision(commit.Hash.String())+"-")
	if err != nil {
		return "", err
	}
	err = os.Chmod(dir, 0o755)
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	}
	if err == nil {
		w := &treeWriter{ctx: ctx, st: st}
		err = w.write(dir, "", tree, before, filepath.Join(s.dir, treeDir))
	}
	if err != nil {
		s.removeTree(dir)
		return "", err
	}
	return dir, nil
}

// replaceDir makes dir hold what next holds, and next what dir held (when it existed). Where
// the system can (Linux's renameat2 with RENAME_EXCHANGE), both are exchanged at once: a
// reader of dir finds one tree or the other, whole, never none; elsewhere dir is missing for
// the moment between two renames.
func replaceDir(next, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(next, dir)
	}
	err := exchange(next, dir)
	if !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	old := next + ".old"
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(next, dir); err != nil {
		return errors.Join(err, os.Rename(old, dir))
	}
	return os.Rename(old, next)
}

// removeTree removes a directory of the working directory in the background; Close waits for
// it.
func (s *Source) removeTree(dir string) {
	s.removing.Add(1)
	go func() {
		defer s.removing.Done()
		if err := os.RemoveAll(dir); err != nil {
			s.log.Warn("cannot remove an old checkout", "dir", dir, "err", err)
		}
	}()
}

// clearDir removes what the working directory holds besides the clone's .git: the tree of an
// earlier Source (or the worktree of an earlier version of gpuctl), a checkout that a crash
// left half-written.
func (s *Source) clearDir() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// treeWriter writes the files of a tree from the object store.
type treeWriter struct {
	ctx context.Context
	st  storer.EncodedObjectStorer
	buf []byte
}

// write writes tree (the directory rel of the repository) into dir, which exists and is
// empty. before is the tree that the directory old holds (nil: none): a file that it holds
// with the same hash and mode is linked to, not written again.
func (w *treeWriter) write(dir, rel string, tree, before *object.Tree, old string) error {
	var had map[string]object.TreeEntry
	if before != nil {
		had = make(map[string]object.TreeEntry, len(before.Entries))
		for _, e := range before.Entries {
			had[e.Name] = e
		}
	}
	for _, e := range tree.Entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		p := path.Join(rel, e.Name)
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
			return fmt.Errorf("path %q: not a file name", p)
		}
		dst := filepath.Join(dir, e.Name)
		o, ok := had[e.Name]
		same := ok && o.Hash == e.Hash && o.Mode == e.Mode
		var err error
		switch e.Mode {
		case filemode.Dir:
			if err := w.writeDir(dst, filepath.Join(old, e.Name), p, e, o, same); err != nil {
				return err // it names the path
			}
		case filemode.Submodule:
			err = os.Mkdir(dst, 0o755)
		case filemode.Symlink:
			err = w.writeSymlink(dst, e.Hash)
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			if same && os.Link(filepath.Join(old, e.Name), dst) == nil {
				continue
			}
			err = w.writeFile(dst, e)
		default:
			err = fmt.Errorf("malformed mode %s", e.Mode)
		}
		if err != nil {
			return fmt.Errorf("path %q: %w", p, err)
		}
	}
	return nil
}

// writeDir writes the subtree e at dst (the directory p of the repository); o is the entry
// of the same name in the tree linked to, at old, when it has one.
func (w *treeWriter) writeDir(dst, old, p string, e, o object.TreeEntry, same bool) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("path %q: %w", p, err)
	}
	sub, err := object.GetTree(w.st, e.Hash)
	if err != nil {
		return fmt.Errorf("path %q: %w", p, err)
	}
	var before *object.Tree
	switch {
	case same:
		before = sub
	case o.Mode == filemode.Dir:
		before, _ = object.GetTree(w.st, o.Hash)
	}
	return w.write(dst, p, sub, before, old)
}

// writeFile writes the blob of e at dst, which must not exist.
func (w *treeWriter) writeFile(dst string, e object.TreeEntry) (err error) {
	perm := os.FileMode(0o644)
	if e.Mode == filemode.Executable {
		perm = 0o755
	}
	r, err := w.blob(e.Hash)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := openFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if w.buf == nil {
		w.buf = make([]byte, 32<<10)
	}
	_, err = io.CopyBuffer(f, r, w.buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeSymlink makes dst a symlink to the blob's content.
func (w *treeWriter) writeSymlink(dst string, h plumbing.Hash) error {
	r, err := w.blob(h)
	if err != nil {
		return err
	}
	defer r.Close()
	target, err := io.ReadAll(io.LimitReader(r, maxLinkTarget+1))
	if err != nil {
		return err
	}
	if len(target) > maxLinkTarget { // not read whole: a blob marked as a link may be huge
		return fmt.Errorf("%s: a symbolic link whose target is longer than %d bytes", dst, maxLinkTarget)
	}
	return os.Symlink(string(target), dst)
}

// maxLinkTarget is the longest symbolic link target a checkout writes (Linux's PATH_MAX).
const maxLinkTarget = 4096

// blob opens the content of the blob h.
func (w *treeWriter) blob(h plumbing.Hash) (io.ReadCloser, error) {
	obj, err := w.st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	return obj.Reader()
}
