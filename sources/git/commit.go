package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/memfs"
	"github.com/gpuctl/gpuctl/internal/repopath"
	"github.com/gpuctl/gpuctl/sources"
)

var _ sources.Committer = (*Source)(nil)

// memRoot is where Commit puts the repository's tree in memory.
const memRoot = "/repository"

// Commit fetches the followed branch, runs edit over the tree of its newest commit (in memory,
// under Options.Path), writes a commit of the result into the clone's object store and pushes
// it: to the followed branch, the push landing only if the branch is still at the commit the
// edit was made on (a compare-and-swap on the remote), or to a new branch opts.Branch. When
// the branch moved, it fetches again and makes the edit again over the new tree, at most
// sources.MaxPushRetries times. Nothing of the working directory changes (the next Fetch
// checks the commit out), no local branch moves, and a commit that was not pushed stays an
// unreferenced object: after a *sources.PushError, the clone is as it was.
//
// Commits are serialised with each other and with Fetch. It needs a branch to follow: a tag
// or a pinned commit cannot be pushed to.
func (s *Source) Commit(ctx context.Context, opts sources.CommitOptions, edit sources.EditFunc) (sources.Committed, error) {
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return sources.Committed{}, ErrClosed
	}
	repo, err := s.open()
	if err != nil {
		return sources.Committed{}, err
	}
	if err := s.CanCommit(); err != nil {
		return sources.Committed{}, err
	}
	tgt, err := s.resolveTarget(ctx, nil)
	if err != nil {
		return sources.Committed{}, s.pushErr(err)
	}
	dst := tgt.remote
	if opts.Branch != "" {
		dst = plumbing.NewBranchReferenceName(opts.Branch)
		if err := dst.Validate(); err != nil {
			return sources.Committed{}, fmt.Errorf("git: branch %q: %w", opts.Branch, err)
		}
	}
	auth, err := s.opts.Auth.method(s.remote)
	if err != nil {
		return sources.Committed{}, s.pushErr(err)
	}
	for attempt := 1; ; attempt++ {
		base, err := s.download(ctx, repo, tgt, auth)
		if err != nil {
			return sources.Committed{}, s.pushErr(err)
		}
		parent, err := s.commitAt(repo, base)
		if err != nil {
			return sources.Committed{}, err
		}
		if err := s.checkTree(repo, parent, s.lastRevision().ID); err != nil {
			return sources.Committed{}, err
		}
		h, files, err := s.makeCommit(repo, parent, opts, edit)
		if err != nil {
			return sources.Committed{}, err
		}
		err = s.push(ctx, repo, h, dst, base, opts.Branch != "", auth)
		if err == nil {
			done := sources.Committed{Commit: h.String(), Branch: dst.Short(), Base: tgt.remote.Short(), Files: files, Dir: s.opts.Path, Attempts: attempt}
			if opts.Branch != "" {
				done.PullRequest = PullRequestURL(s.remote.display, done.Branch, done.Base)
			}
			s.log.Debug("pushed", "commit", humanize.Revision(done.Commit), "branch", done.Branch, "attempts", attempt)
			return done, nil
		}
		if opts.Branch != "" || attempt > sources.MaxPushRetries || !s.moved(ctx, tgt, base) {
			if attempt > sources.MaxPushRetries {
				err = fmt.Errorf("%w (the branch moved during each of %d attempts)", err, attempt)
			}
			return sources.Committed{}, s.pushErr(err)
		}
		s.log.Info("push refused: the branch moved; making the edit again on its new commit", "attempt", attempt, "branch", tgt.remote.Short())
	}
}

// CanCommit reports why Commit cannot push: the source follows a tag or pins a commit (a
// branch, or the remote's HEAD, can be pushed to).
func (s *Source) CanCommit() error {
	s.mu.Lock()
	tgt := s.target
	s.mu.Unlock()
	if !tgt.pin.IsZero() || (tgt.remote != "" && !tgt.remote.IsBranch()) {
		return fmt.Errorf("git: %s: a commit needs a branch to push to, and the source follows %s", s.remote.display, s.URL())
	}
	return nil
}

// pushErr is err as a *sources.PushError of this source's remote.
func (s *Source) pushErr(err error) error {
	return &sources.PushError{Remote: s.remote.display, Err: err}
}

// makeCommit runs edit over parent's tree and writes a commit of its files, with parent as
// its parent, into the object store; it returns the commit and its files' paths.
func (s *Source) makeCommit(repo *gogit.Repository, parent *object.Commit, opts sources.CommitOptions,
	edit sources.EditFunc) (plumbing.Hash, []string, error) {
	fsys, dir, err := s.memTree(parent)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	e, err := edit(fsys, dir)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if e == nil || len(e.Files) == 0 {
		return plumbing.ZeroHash, nil, errors.New("git: the edit changes no file: nothing to commit")
	}
	changes := map[string]*sources.FileChange{}
	var files []string
	for i := range e.Files {
		f := &e.Files[i]
		p := path.Join(s.opts.Path, f.Path)
		if err := checkRepoPath(f.Path); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		changes[p] = f
		files = append(files, p)
	}
	st := repo.Storer
	tree, err := writeTree(st, parent.TreeHash, changes)
	if err == nil && tree.IsZero() { // every file removed
		tree, err = storeTree(st, nil)
	}
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("git: commit: %w", err)
	}
	if tree == parent.TreeHash {
		return plumbing.ZeroHash, nil, errors.New("git: the edit leaves the tree as it is: nothing to commit")
	}
	now := time.Now()
	c := &object.Commit{
		Author:       object.Signature{Name: opts.Author.Name, Email: opts.Author.Email, When: now},
		Committer:    object.Signature{Name: opts.Committer.Name, Email: opts.Committer.Email, When: now},
		Message:      e.Message,
		TreeHash:     tree,
		ParentHashes: []plumbing.Hash{parent.Hash},
	}
	obj := st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	h, err := st.SetEncodedObject(obj)
	return h, files, err
}

// checkRepoPath refuses a path of an edit that a write may not create or change
// (repopath.Check): not a clean relative path, a dot directory or file, a name Git refuses.
func checkRepoPath(p string) error {
	if err := repopath.Check(p); err != nil {
		return fmt.Errorf("git: %w", err)
	}
	return nil
}

// memTree copies the files of the commit's tree under Options.Path into memory (memfs: any name
// Git takes): regular and executable files (symbolic links and submodules are left out, as
// render skips them).
func (s *Source) memTree(c *object.Commit) (filesys.FileSystem, string, error) {
	tree, err := c.Tree()
	if err == nil && s.opts.Path != "" {
		tree, err = tree.Tree(s.opts.Path)
	}
	if err != nil {
		return nil, "", fmt.Errorf("git: %s@%s: %w", s.remote.display, humanize.Revision(c.Hash.String()), err)
	}
	fsys := memfs.New()
	dir := path.Join(memRoot, s.opts.Path)
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, "", err
	}
	err = tree.Files().ForEach(func(f *object.File) error {
		if f.Mode != filemode.Regular && f.Mode != filemode.Executable && f.Mode != filemode.Deprecated {
			return nil
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		p := path.Join(dir, f.Name)
		if err := fsys.MkdirAll(path.Dir(p)); err != nil {
			return err
		}
		return fsys.WriteFile(p, data)
	})
	if err != nil {
		return nil, "", fmt.Errorf("git: read %s@%s: %w", s.remote.display, humanize.Revision(c.Hash.String()), err)
	}
	return fsys, dir, nil
}

// push pushes commit h to the remote ref dst: to a new branch only if it does not exist
// (newBranch), else only if the remote's dst is still base.
func (s *Source) push(ctx context.Context, repo *gogit.Repository, h plumbing.Hash, dst plumbing.ReferenceName,
	base plumbing.Hash, newBranch bool, auth transport.AuthMethod) error {
	opts := &gogit.PushOptions{RemoteName: "origin", Auth: auth}
	if newBranch {
		opts.RefSpecs = []config.RefSpec{config.RefSpec(h.String() + ":" + string(dst))}
	} else {
		// Forced, so that go-git does not walk the shallow history for a fast-forward check;
		// RequireRemoteRefs makes it a compare-and-swap instead: the remote must be at base,
		// and receive-pack updates the ref only if it still is.
		opts.RefSpecs = []config.RefSpec{config.RefSpec("+" + h.String() + ":" + string(dst))}
		opts.RequireRemoteRefs = []config.RefSpec{config.RefSpec(base.String() + ":" + string(dst))}
	}
	err := s.exchange(ctx, func(ctx context.Context) error { return repo.PushContext(ctx, opts) })
	if errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// moved reports whether the remote's branch is no longer at base (a push was refused because
// someone pushed first), asking the remote now.
func (s *Source) moved(ctx context.Context, tgt target, base plumbing.Hash) bool {
	refs, err := s.listRemote(ctx)
	if err != nil {
		return false
	}
	h, ok := findRef(refs, tgt.remote)
	return ok && h != base
}

// writeTree writes the tree base (zero: an empty one) with changes made (paths relative to
// it) into the object store and returns its hash; the zero hash for a tree left empty.
func writeTree(st storer.EncodedObjectStorer, base plumbing.Hash, changes map[string]*sources.FileChange) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if !base.IsZero() {
		t, err := object.GetTree(st, base)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	sub := map[string]map[string]*sources.FileChange{}
	for p, c := range changes {
		if first, rest, nested := strings.Cut(p, "/"); nested {
			if sub[first] == nil {
				sub[first] = map[string]*sources.FileChange{}
			}
			sub[first][rest] = c
			continue
		}
		old, exists := entries[p]
		if exists && old.Mode == filemode.Dir {
			return plumbing.ZeroHash, fmt.Errorf("%s is a directory", p)
		}
		if c.Delete {
			delete(entries, p)
			continue
		}
		mode := filemode.Regular
		if exists && old.Mode == filemode.Executable {
			mode = filemode.Executable
		}
		h, err := writeBlob(st, c.Data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[p] = object.TreeEntry{Name: p, Mode: mode, Hash: h}
	}
	for name, ch := range sub {
		var subBase plumbing.Hash
		if e, ok := entries[name]; ok {
			if e.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is a file", name)
			}
			subBase = e.Hash
		}
		h, err := writeTree(st, subBase, ch)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%s/%w", name, err)
		}
		if h.IsZero() {
			delete(entries, name)
		} else {
			entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	return storeTree(st, entries)
}

// storeTree stores a tree of the entries.
func storeTree(st storer.EncodedObjectStorer, entries map[string]object.TreeEntry) (plumbing.Hash, error) {
	t := &object.Tree{}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	// Git orders a tree's entries by name, a directory's name read with a trailing slash.
	sortName := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(t.Entries, func(a, b object.TreeEntry) int { return strings.Compare(sortName(a), sortName(b)) })
	obj := st.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}

// writeBlob stores data as a blob.
func writeBlob(st storer.EncodedObjectStorer, data []byte) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := io.Copy(w, bytes.NewReader(data)); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}
