package git

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/sources"
)

// Fetch brings the followed ref's newest commit and returns it, checked out into a directory
// of its own.
//
// The first call clones (depth 1 for branches and tags); later calls fetch with a forced
// refspec, so force-pushes and rewritten history converge. A pinned commit is fetched once.
// Each exchange with the remote is bounded by Options.Timeout: a server that never answers
// fails the Fetch with "no answer within 1m0s".
//
// A new commit is checked out into a new directory (checkout): its files are written from
// the object store, those that the last good revision's tree holds unchanged linked to it,
// ctx honoured between files; once it is complete, it takes the place of the last good
// revision's tree at once, so Revision.Dir (Dir/tree) always holds a whole tree: the last good
// revision's until then, and after a failed checkout (a full disk). The previous tree is
// removed in the background.
//
// Revision.Changed lists the files under Options.Path that differ between the trees of the
// previous and the new commit. The previous commit stays in the local object store, so this
// works across force-pushes too. It is nil on the first Fetch (and when the previous commit
// cannot be read), and empty when the commit did not change.
//
// On failure (network, authentication, missing ref or path, checkout) Fetch returns the last
// good revision, its files untouched, and an error naming the URL and the step, which it logs;
// so it does for a commit whose tree holds a path that Git refuses to check out (a
// *sources.UncheckableError naming the commit and the path), and the next commit without it
// is fetched as ever.
func (s *Source) Fetch(ctx context.Context) (sources.Revision, error) {
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	s.mu.Lock()
	closed, last := s.closed, s.last
	s.mu.Unlock()
	if closed {
		return last, ErrClosed
	}
	rev, refHash, err := s.fetch(ctx, last)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			s.log.Debug("fetch stopped", "err", err)
		} else {
			s.log.Warn("fetch failed", "err", err)
		}
		return last, err
	}
	s.mu.Lock()
	s.last, s.lastRef = rev, refHash
	s.mu.Unlock()
	if rev.ID != last.ID {
		s.log.Debug("fetched", "commit", rev.ID, "changed", len(rev.Changed))
	}
	return rev, nil
}

// fetch does the work of Fetch; it returns the revision and the fetched ref's hash.
func (s *Source) fetch(ctx context.Context, last sources.Revision) (sources.Revision, plumbing.Hash, error) {
	repo, err := s.open()
	if err != nil {
		return sources.Revision{}, plumbing.ZeroHash, err
	}
	tgt, err := s.resolveTarget(ctx, nil)
	if err != nil {
		return sources.Revision{}, plumbing.ZeroHash, s.fetchErr(err)
	}
	auth, err := s.opts.Auth.method(s.remote)
	if err != nil {
		return sources.Revision{}, plumbing.ZeroHash, s.fetchErr(err)
	}
	refHash, err := s.download(ctx, repo, tgt, auth)
	if err != nil {
		return sources.Revision{}, plumbing.ZeroHash, s.fetchErr(err)
	}
	commit, err := s.commitAt(repo, refHash)
	if err != nil {
		return sources.Revision{}, plumbing.ZeroHash, err
	}
	if commit.Hash.String() == last.ID {
		return s.revision(commit, []string{}), refHash, nil
	}
	if err := s.checkTree(repo, commit, last.ID); err != nil {
		return sources.Revision{}, plumbing.ZeroHash, err
	}
	changed := s.changedFiles(ctx, repo, last.ID, commit)
	if err := s.checkout(ctx, repo, commit, last.ID); err != nil {
		return sources.Revision{}, plumbing.ZeroHash, err
	}
	return s.revision(commit, changed), refHash, nil
}

// open opens the clone in the working directory, creating it on first use, and points its
// origin remote at the URL. The first call removes what the directory holds besides the
// clone (clearDir).
func (s *Source) open() (*gogit.Repository, error) {
	if s.repo != nil {
		return s.repo, nil
	}
	repo, err := gogit.PlainOpen(s.dir)
	if errors.Is(err, gogit.ErrRepositoryNotExists) {
		repo, err = gogit.PlainInit(s.dir, false)
	}
	if err == nil {
		err = setOrigin(repo, s.remote.fetch)
	}
	if err == nil {
		err = s.clearDir()
	}
	if err != nil {
		return nil, fmt.Errorf("git: %s: open %s: %w", s.remote.display, s.dir, err)
	}
	s.repo = repo
	return repo, nil
}

// setOrigin makes the origin remote point at url.
func setOrigin(repo *gogit.Repository, url string) error {
	rem, err := repo.Remote("origin")
	switch {
	case err == nil && slices.Equal(rem.Config().URLs, []string{url}):
		return nil
	case err == nil:
		if err := repo.DeleteRemote("origin"); err != nil {
			return err
		}
	case !errors.Is(err, gogit.ErrRemoteNotFound):
		return err
	}
	_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}})
	return err
}

// download fetches the target and returns the hash its local ref now points to.
func (s *Source) download(ctx context.Context, repo *gogit.Repository, tgt target,
	auth transport.AuthMethod) (plumbing.Hash, error) {
	if !tgt.pin.IsZero() {
		return tgt.pin, s.exchange(ctx, func(ctx context.Context) error { return downloadPinned(ctx, repo, tgt.pin, auth) })
	}
	err := s.exchange(ctx, func(ctx context.Context) error {
		return repo.FetchContext(ctx, &gogit.FetchOptions{
			RemoteName: "origin",
			RefSpecs:   []config.RefSpec{tgt.refSpec()},
			Depth:      1,
			Tags:       gogit.NoTags,
			Auth:       auth,
			Force:      true,
		})
	})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return plumbing.ZeroHash, err
	}
	ref, err := repo.Reference(tgt.local, false)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%s: %w", tgt.remote, err)
	}
	return ref.Hash(), nil
}

// downloadPinned fetches a pinned commit unless it is already here: by hash when the server
// allows it, otherwise every branch and tag in full.
func downloadPinned(ctx context.Context, repo *gogit.Repository, pin plumbing.Hash,
	auth transport.AuthMethod) error {
	if _, err := repo.CommitObject(pin); err == nil {
		return nil
	}
	opts := &gogit.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{config.RefSpec(pin.String() + ":" + string(pinnedRef))},
		Depth:      1,
		Tags:       gogit.NoTags,
		Auth:       auth,
		Force:      true,
	}
	err := repo.FetchContext(ctx, opts)
	if errors.Is(err, gogit.ErrExactSHA1NotSupported) {
		opts.RefSpecs = []config.RefSpec{
			"+refs/heads/*:refs/remotes/origin/*",
			"+refs/tags/*:refs/tags/*",
		}
		opts.Depth = 0
		err = repo.FetchContext(ctx, opts)
	}
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return err
	}
	if _, err := repo.CommitObject(pin); err != nil {
		return fmt.Errorf("commit %s is on no branch or tag of the remote", pin)
	}
	return nil
}

// commitAt peels h (a commit, or a tag pointing at one) to a commit, and checks that the
// commit holds Options.Path.
func (s *Source) commitAt(repo *gogit.Repository, h plumbing.Hash) (*object.Commit, error) {
	obj, err := repo.Object(plumbing.AnyObject, h)
	for err == nil {
		tag, ok := obj.(*object.Tag)
		if !ok {
			break
		}
		obj, err = tag.Object()
	}
	commit, ok := obj.(*object.Commit)
	if err == nil && !ok {
		err = fmt.Errorf("%s is a %s, not a commit", h, obj.Type())
	}
	if err != nil {
		return nil, fmt.Errorf("git: %s: %w", s.remote.display, err)
	}
	if s.opts.Path != "" {
		tree, err := commit.Tree()
		if err == nil {
			_, err = tree.Tree(s.opts.Path)
		}
		if err != nil {
			return nil, fmt.Errorf("git: %s@%s: path %q: %w", s.remote.display,
				humanize.Revision(commit.Hash.String()), s.opts.Path, err)
		}
	}
	return commit, nil
}

// changedFiles lists the files under Options.Path that differ between the previous commit
// and commit, relative to Path; nil when unknown.
func (s *Source) changedFiles(ctx context.Context, repo *gogit.Repository, prev string,
	commit *object.Commit) []string {
	if prev == "" {
		return nil
	}
	if prev == commit.Hash.String() {
		return []string{}
	}
	changes, err := diffCommits(ctx, repo, plumbing.NewHash(prev), commit)
	if err != nil {
		s.log.Debug("cannot diff against the previous commit", "commit", prev, "err", err)
		return nil
	}
	files := []string{}
	for _, ch := range changes {
		for _, name := range []string{ch.From.Name, ch.To.Name} {
			if rel, ok := s.relative(name); ok {
				files = append(files, rel)
			}
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// diffCommits compares the trees of the commit prev and commit.
func diffCommits(ctx context.Context, repo *gogit.Repository, prev plumbing.Hash,
	commit *object.Commit) (object.Changes, error) {
	old, err := repo.CommitObject(prev)
	if err != nil {
		return nil, err
	}
	oldTree, err := old.Tree()
	if err != nil {
		return nil, err
	}
	newTree, err := commit.Tree()
	if err != nil {
		return nil, err
	}
	return object.DiffTreeWithOptions(ctx, oldTree, newTree, nil)
}

// relative maps a repository path to one relative to Options.Path.
func (s *Source) relative(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	if s.opts.Path == "" {
		return name, true
	}
	rel, ok := strings.CutPrefix(name, s.opts.Path+"/")
	return rel, ok
}

// revision describes commit as checked out.
func (s *Source) revision(commit *object.Commit, changed []string) sources.Revision {
	subject, _, _ := strings.Cut(strings.TrimSpace(commit.Message), "\n")
	return sources.Revision{
		ID:      commit.Hash.String(),
		Dir:     filepath.Join(s.dir, treeDir, filepath.FromSlash(s.opts.Path)),
		Message: strings.TrimSpace(subject),
		Author:  commit.Author.Name,
		Time:    commit.Committer.When,
		Changed: changed,
	}
}
