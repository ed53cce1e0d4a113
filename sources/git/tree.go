package git

import (
	"errors"
	"path"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/gpuctl/gpuctl/internal/repopath"
	"github.com/gpuctl/gpuctl/sources"
)

// checkTree refuses a commit whose tree holds a path that Git refuses to check out
// (repopath.CheckTree) with a *sources.UncheckableError, before anything of it is checked
// out or read: go-git's checkout would stop half-way through the worktree, and its tree
// walks fail on such a name. Only what differs from the tree of good (a commit checked out
// before, "" for none) is looked at.
func (s *Source) checkTree(repo *gogit.Repository, commit *object.Commit, good string) error {
	tree, err := commit.Tree()
	if err != nil {
		return err
	}
	var before *object.Tree
	if good != "" && good != commit.Hash.String() {
		if c, err := repo.CommitObject(plumbing.NewHash(good)); err == nil {
			before, _ = c.Tree()
		}
	}
	var bad *repopath.Error
	if err := refusedPath(repo.Storer, tree, before, ""); errors.As(err, &bad) {
		return &sources.UncheckableError{Remote: s.remote.display, Revision: commit.Hash.String(), Path: bad.Path, Reason: bad.Reason}
	} else if err != nil {
		return err
	}
	return nil
}

// refusedPath returns a *repopath.Error for the first entry below dir of tree whose name Git
// refuses, descending only into the directories that differ from before's (nil: all).
func refusedPath(st storer.EncodedObjectStorer, tree, before *object.Tree, dir string) error {
	old := map[string]object.TreeEntry{}
	if before != nil {
		for _, e := range before.Entries {
			old[e.Name] = e
		}
	}
	for _, e := range tree.Entries {
		p := path.Join(dir, e.Name)
		if o, ok := old[e.Name]; ok && o.Hash == e.Hash && o.Mode == e.Mode {
			continue // checked out before
		}
		if err := repopath.CheckTree(e.Name); err != nil {
			var bad *repopath.Error
			if errors.As(err, &bad) {
				return &repopath.Error{Path: p, Reason: bad.Reason}
			}
			return err
		}
		if e.Mode != filemode.Dir {
			continue
		}
		sub, err := object.GetTree(st, e.Hash)
		if err != nil {
			return err
		}
		var subBefore *object.Tree
		if o, ok := old[e.Name]; ok && o.Mode == filemode.Dir {
			subBefore, _ = object.GetTree(st, o.Hash)
		}
		if err := refusedPath(st, sub, subBefore, p); err != nil {
			return err
		}
	}
	return nil
}
