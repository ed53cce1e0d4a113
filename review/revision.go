package review

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
)

// MaxFileSize is the largest file read from a revision; larger files are skipped and listed
// in Revision.Skipped (render would refuse them anyway).
const MaxFileSize = 1 << 20

// PolicyFile is the name of the policy file, looked up from the compared path upwards.
const PolicyFile = render.PolicyFileName

// WorkingTree names the head side when no head revision is given.
const WorkingTree = "working tree"

// Revision is one side of a review: the files of a commit (or of the working tree) below the
// compared path, plus the .gpuctl.yaml and gpuctl-policy.yaml files of the directories above it.
type Revision struct {
	// Name is the revision as the user gave it, or WorkingTree.
	Name string `json:"name"`
	// Commit is the resolved commit hash; empty for the working tree.
	Commit string `json:"commit,omitempty"`
	// Files maps slash-separated paths relative to the repository root to their content.
	Files map[string]string `json:"-"`
	// Skipped lists files larger than MaxFileSize, symbolic links and submodules.
	Skipped []string `json:"skipped,omitempty"`
}

// Repo is a Git repository opened for review.
type Repo struct {
	repo *git.Repository
	// Root is the absolute directory of the working tree.
	Root string
}

// Open opens the repository holding dir (a parent directory's .git counts).
func Open(dir string) (*Repo, error) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("%s: open git repository: %w", dir, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	root, err := filepath.Abs(wt.Filesystem.Root())
	if err != nil {
		return nil, err
	}
	if resolved, err := filepath.EvalSymlinks(root); err == nil {
		root = resolved
	}
	return &Repo{repo: r, Root: root}, nil
}

// RelPath returns p (a path on disk) relative to the repository root, slash-separated, "." for
// the root itself; it is an error for p to be outside the repository.
func (r *Repo) RelPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	rel, err := filepath.Rel(r.Root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the repository %s", p, r.Root)
	}
	return filepath.ToSlash(rel), nil
}

// Revision reads the files of rev (anything git rev-parse accepts: a branch, tag, hash,
// HEAD~1, origin/main) below under, a slash-separated directory relative to the root.
func (r *Repo) Revision(rev, under string) (*Revision, error) {
	h, err := r.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev, err)
	}
	c, err := r.repo.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev, err)
	}
	out := &Revision{Name: rev, Commit: h.String(), Files: map[string]string{}}
	under = path.Clean(under)
	sub := tree
	if under != "." {
		if sub, err = tree.Tree(under); err != nil {
			if errors.Is(err, object.ErrDirectoryNotFound) {
				return out, nil // the path does not exist at this revision: nothing to render
			}
			return nil, fmt.Errorf("revision %s: %s: %w", rev, under, err)
		}
	}
	if err := out.readTree(sub, under); err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev, err)
	}
	for _, p := range ancestorFiles(under) {
		if f, err := tree.File(p); err == nil {
			if content, err := f.Contents(); err == nil && f.Size <= MaxFileSize {
				out.Files[p] = content
			}
		}
	}
	return out, nil
}

// readTree adds the regular files of t, which sits at dir, to the revision.
func (rev *Revision) readTree(t *object.Tree, dir string) error {
	walker := object.NewTreeWalker(t, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := path.Join(dir, name)
		switch entry.Mode {
		case filemode.Dir:
			continue
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
		default: // symbolic links and submodules
			rev.Skipped = append(rev.Skipped, p)
			continue
		}
		if err := rev.readBlob(t, name, p); err != nil {
			return err
		}
	}
}

func (rev *Revision) readBlob(t *object.Tree, name, p string) error {
	f, err := t.File(name)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if f.Size > MaxFileSize {
		rev.Skipped = append(rev.Skipped, p)
		return nil
	}
	content, err := f.Contents()
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	rev.Files[p] = content
	return nil
}

// ancestorFiles lists the configuration and policy files that apply to dir from above it.
func ancestorFiles(dir string) []string {
	if dir == "." {
		return nil
	}
	var out []string
	for d := path.Dir(dir); ; d = path.Dir(d) {
		out = append(out, path.Join(d, keys.ConfigFile), path.Join(d, PolicyFile))
		if d == "." {
			return out
		}
	}
}

// WorkingTree reads the files on disk below under, as the head side of a review: tracked and
// untracked files, without those that .gitignore ignores and without .git.
func (r *Repo) WorkingTree(under string) (*Revision, error) {
	wt, err := r.repo.Worktree()
	if err != nil {
		return nil, err
	}
	patterns, _ := gitignore.ReadPatterns(wt.Filesystem, nil) // unreadable .gitignore files ignore nothing
	ignored := gitignore.NewMatcher(patterns)
	out := &Revision{Name: WorkingTree, Files: map[string]string{}}
	under = path.Clean(under)
	start := filepath.Join(r.Root, filepath.FromSlash(under))
	if _, err := os.Stat(start); errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	err = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, r.Root), string(filepath.Separator)))
		if rel == "" {
			return nil
		}
		if ignored.Match(strings.Split(rel, "/"), d.IsDir()) || d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		return out.readDisk(p, rel, d)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", WorkingTree, err)
	}
	for _, p := range ancestorFiles(under) {
		if b, err := os.ReadFile(filepath.Join(r.Root, filepath.FromSlash(p))); err == nil && len(b) <= MaxFileSize {
			out.Files[p] = string(b)
		}
	}
	return out, nil
}

func (rev *Revision) readDisk(p, rel string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Size() > MaxFileSize {
		rev.Skipped = append(rev.Skipped, rel)
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	rev.Files[rel] = string(b)
	return nil
}
