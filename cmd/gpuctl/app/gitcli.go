package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// gitTree is a Git work tree that the write verbs commit in with the git CLI, so that the
// user's configuration, hooks and commit signing apply.
type gitTree struct {
	// dir is the top of the work tree.
	dir string
}

// gitError is a git command that failed, with what it wrote on standard error.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return "git " + strings.Join(e.args, " ") + ": " + msg
}

func (e *gitError) Unwrap() error { return e.err }

// runGit runs git in dir and returns its standard output, trimmed.
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := runGitRaw(ctx, dir, args...)
	return strings.TrimSpace(out), err
}

// runGitRaw runs git in dir and returns its standard output as it is.
func runGitRaw(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return stdout.String(), nil
}

// openGitTree finds the work tree that holds dir.
func openGitTree(ctx context.Context, dir string) (*gitTree, error) {
	top, err := runGit(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a Git work tree (give the clone with --repo): %w", dir, err)
	}
	return &gitTree{dir: top}, nil
}

// git runs git in the work tree.
func (g *gitTree) git(ctx context.Context, args ...string) (string, error) {
	return runGit(ctx, g.dir, args...)
}

// config returns a configuration value, "" when unset.
func (g *gitTree) config(ctx context.Context, key string) string {
	v, _ := g.git(ctx, "config", "--get", key)
	return v
}

// authorEmail is the e-mail address git commits as: GIT_AUTHOR_EMAIL, else user.email (git
// var resolves both as git commit does), or "".
func (g *gitTree) authorEmail(ctx context.Context) string {
	ident, err := g.git(ctx, "var", "GIT_AUTHOR_IDENT")
	if err != nil {
		return g.config(ctx, "user.email")
	}
	if i, j := strings.Index(ident, "<"), strings.Index(ident, ">"); i >= 0 && j > i {
		return ident[i+1 : j]
	}
	return ""
}

// head is the commit of HEAD.
func (g *gitTree) head(ctx context.Context) (string, error) { return g.git(ctx, "rev-parse", "HEAD") }

// branch is the branch checked out ("" when HEAD is detached).
func (g *gitTree) branch(ctx context.Context) string {
	b, err := g.git(ctx, "symbolic-ref", "--short", "-q", "HEAD")
	if err != nil {
		return ""
	}
	return b
}

// upstream is where the branch checked out pushes: its remote and the branch there.
func (g *gitTree) upstream(ctx context.Context) (remote, branch string, err error) {
	b := g.branch(ctx)
	if b == "" {
		return "", "", errors.New("HEAD is detached: check out a branch that tracks the remote")
	}
	remote = g.config(ctx, "branch."+b+".remote")
	merge := g.config(ctx, "branch."+b+".merge")
	if remote == "" || merge == "" {
		return "", "", fmt.Errorf("branch %s has no upstream: set one with git branch --set-upstream-to=origin/%s", b, b)
	}
	return remote, strings.TrimPrefix(merge, "refs/heads/"), nil
}

// dirty lists the paths among paths (all when none) that have changes not committed, tracked
// files only.
func (g *gitTree) dirty(ctx context.Context, paths ...string) ([]string, error) {
	args := append([]string{"status", "--porcelain", "--untracked-files=no", "--"}, paths...)
	out, err := runGitRaw(ctx, g.dir, args...)
	if err != nil {
		return nil, err
	}
	var list []string
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 3 {
			list = append(list, l[3:])
		}
	}
	return list, nil
}

// commit stages paths (created, changed or removed) and commits them alone, whatever else the
// index holds; it returns the new commit.
func (g *gitTree) commit(ctx context.Context, message string, paths []string) (string, error) {
	if _, err := g.git(ctx, append([]string{"add", "-A", "--"}, paths...)...); err != nil {
		return "", err
	}
	if _, err := g.git(ctx, append([]string{"commit", "-q", "-m", message, "--"}, paths...)...); err != nil {
		return "", err
	}
	return g.head(ctx)
}

// rejected tells a push that the remote refused because its branch moved.
func rejected(err error) bool {
	var ge *gitError
	if !errors.As(err, &ge) {
		return false
	}
	return strings.Contains(ge.stderr, "[rejected]") || strings.Contains(ge.stderr, "non-fast-forward") ||
		strings.Contains(ge.stderr, "fetch first")
}

// conflictError is a rebase that stopped on conflicts.
type conflictError struct {
	files []string
	onto  string
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("the remote branch %s moved and changes %s too: the rebase stopped on a conflict; the repository is as it was before the command, pull and run it again",
		e.onto, strings.Join(e.files, ", "))
}

// pushRebasing pushes HEAD to remote's branch. When the push is refused because the branch
// moved, it fetches, rebases the branch on it once and pushes again. A rebase that stops on a
// conflict is aborted, HEAD is reset to before (keeping the work tree's other changes), and
// the error names the conflicting files.
func (g *gitTree) pushRebasing(ctx context.Context, remote, branch, before string) error {
	err := g.push(ctx, remote, "HEAD:refs/heads/"+branch)
	if err == nil || !rejected(err) {
		return err
	}
	if _, err := g.git(ctx, "fetch", "-q", remote, branch); err != nil {
		return err
	}
	if _, err := g.git(ctx, "rebase", "-q", "FETCH_HEAD"); err != nil {
		files, _ := g.git(ctx, "diff", "--name-only", "--diff-filter=U")
		if _, aerr := g.git(ctx, "rebase", "--abort"); aerr != nil {
			return fmt.Errorf("%w; and the rebase could not be aborted: %w", err, aerr)
		}
		if _, rerr := g.git(ctx, "reset", "-q", "--keep", before); rerr != nil {
			return fmt.Errorf("%w; and the commit could not be undone: %w", err, rerr)
		}
		if files == "" {
			return fmt.Errorf("rebase on %s/%s: %w", remote, branch, err)
		}
		return &conflictError{files: strings.Fields(files), onto: remote + "/" + branch}
	}
	return g.push(ctx, remote, "HEAD:refs/heads/"+branch)
}

// push pushes a refspec to remote.
func (g *gitTree) push(ctx context.Context, remote, refspec string) error {
	_, err := g.git(ctx, "push", "-q", remote, refspec)
	return err
}
