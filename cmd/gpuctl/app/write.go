package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/review"
	gitsource "github.com/gpuctl/gpuctl/sources/git"
)

// The write verbs (create, delete, pause, resume, scale) keep GitOps: each edits the files of a
// clone of the repository (package edit) and commits the change with the git CLI; the
// reconciler applies the commit once it is pushed.

// writeOptions are the flags that every write verb has.
type writeOptions struct {
	repo    string
	dryRun  bool
	push    bool
	branch  string
	wait    bool
	timeout time.Duration
	kube    kube.Options
	system  string
	// render holds --cluster only (options.Render.BindClusterFlagUsage): the cluster the edit
	// is for (edit.Repo.Cluster).
	render options.Render
}

// BindFlags adds --repo, --cluster, --dry-run, --push, --branch, --wait, --timeout, and the
// kubeconfig's flags and --reconciler-namespace that --wait reads the daemon's status with.
func (o *writeOptions) BindFlags(fs *pflag.FlagSet) {
	o.render.BindClusterFlagUsage(fs, "in a repository of several clusters (docs/fleet.md): edit for this cluster, whose jobs are the shared files' and those of clusters/NAME/; "+
		"a team's new file goes to clusters/NAME/ (without it: the shared directory, which every cluster runs)")
	fs.StringVar(&o.repo, "repo", "", "the clone of the repository to commit in (default: the Git work tree of the current directory)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the diff of the files, change nothing")
	fs.BoolVar(&o.push, "push", false, "push the commit to the branch's upstream; when the branch moved, rebase once and push again")
	fs.StringVar(&o.branch, "branch", "", "commit to this new branch instead (the checkout stays as it is) and print the pull request's URL; with --push, push it")
	fs.BoolVar(&o.wait, "wait", false, "with --push: wait until gpuctl-reconciler has applied the commit, then show the job")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "with --wait: how long to wait")
	o.kube.BindFlags(fs)
	fs.StringVar(&o.system, "reconciler-namespace", keys.SystemNamespace, "with --wait: the namespace of gpuctl-reconciler, whose status says what it applied")
}

// check refuses flags that do not go together.
func (o *writeOptions) check() error {
	switch {
	case o.wait && !o.push:
		return errors.New("--wait needs --push: the reconciler applies what is pushed")
	case o.wait && o.branch != "":
		return errors.New("--wait cannot go with --branch: the reconciler applies the branch once it is merged")
	case o.branch != "" && strings.HasPrefix(o.branch, "-"):
		return fmt.Errorf("--branch %q: not a branch name", o.branch)
	}
	return nil
}

// failed makes an error of a write verb exit 1, as kubectl's do.
func failed(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitFailed, Err: err}
}

// writeArgs checks a write verb's arguments, exiting 1 as its other errors do.
func writeArgs(n int, usage string) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return failed(fmt.Errorf("expected %s, got %d arguments", usage, len(args)))
		}
		return nil
	}
}

// who is the person who runs the command: their Git identity, and their team by the teams: of
// .gpuctl.yaml.
type who struct {
	email string
	team  string
}

// actor is who commit messages name: the team, else the e-mail address.
func (w who) actor() string {
	if w.team != "" {
		return w.team
	}
	if w.email != "" {
		return w.email
	}
	return "unknown"
}

// editFunc makes a write verb's edit of the repository.
type editFunc func(repo *edit.Repo, me who) (*edit.Result, error)

// runWrite edits the clone with fn and commits the result: the one flow of every write verb.
func runWrite(ctx context.Context, s Streams, o *writeOptions, fn editFunc) error {
	return failed(o.run(ctx, s, fn))
}

func (o *writeOptions) run(ctx context.Context, s Streams, fn editFunc) error {
	if err := o.check(); err != nil {
		return err
	}
	start := o.repo
	if start == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		start = wd
	}
	tree, err := openGitTree(ctx, start)
	if err != nil {
		return err
	}
	sub, err := gitopsRoot(start, tree.dir)
	if err != nil {
		return err
	}
	if o.branch != "" && !o.dryRun {
		return o.onBranch(ctx, s, tree, sub, fn)
	}
	repo, res, me, err := o.edit(ctx, tree, sub, fn)
	if err != nil {
		return err
	}
	printWarnings(s, res)
	if o.dryRun {
		printDiff(s, sub, res)
		fmt.Fprintln(s.Err, "dry run: nothing was changed")
		return nil
	}
	paths := treePaths(sub, res)
	if o.push {
		if dirty, err := tree.dirty(ctx); err != nil {
			return err
		} else if len(dirty) > 0 {
			return fmt.Errorf("--push may have to rebase, and the work tree has changes not committed (%s): commit or stash them first", strings.Join(dirty, ", "))
		}
	} else if dirty, err := tree.dirty(ctx, paths...); err != nil {
		return err
	} else if len(dirty) > 0 {
		return fmt.Errorf("%s: changes not committed: commit or stash them first", strings.Join(dirty, ", "))
	}
	before, err := tree.head(ctx)
	if err != nil {
		return err
	}
	if err := edit.Apply(repo.FS, repo.Root, res.Changes); err != nil {
		return err
	}
	sha, err := commitEdit(ctx, s, tree, sub, res, me, paths)
	if err != nil {
		return err
	}
	if !o.push {
		fmt.Fprintln(s.Err, "not pushed: git push (or --push) hands it to gpuctl-reconciler")
		return nil
	}
	remote, branch, err := tree.upstream(ctx)
	if err != nil {
		return fmt.Errorf("committed %s, not pushed: %w", humanize.Revision(sha), err)
	}
	if err := tree.pushRebasing(ctx, remote, branch, before); err != nil {
		var ce *conflictError
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("committed %s, not pushed: %w", humanize.Revision(sha), err)
	}
	if sha, err = tree.head(ctx); err != nil { // a rebase made another commit
		return err
	}
	fmt.Fprintf(s.Out, "pushed %s to %s/%s\n", humanize.Revision(sha), remote, branch)
	if o.wait {
		return o.waitApplied(ctx, s, tree, sha, res)
	}
	return nil
}

// edit opens the repository at sub (below the work tree's top), finds who runs the command
// and makes the edit, in memory: edit.Apply writes it.
func (o *writeOptions) edit(ctx context.Context, tree *gitTree, sub string, fn editFunc) (*edit.Repo, *edit.Result, who, error) {
	repo, err := edit.Open(filesys.MakeFsOnDisk(), filepath.Join(tree.dir, filepath.FromSlash(sub)))
	if err != nil {
		return nil, nil, who{}, err
	}
	if o.branch == "" {
		// A commit to the checkout's branch, which gpuctl-reconciler may follow: no pull
		// request reviews it, so it passes the review's checks, as the API's writes do.
		repo.Review = review.EditCheck(repo.FS, repo.Root, tree.dir)
	}
	repo.Cluster = o.render.Cluster
	me := who{email: tree.authorEmail(ctx)}
	me.team, _ = repo.Config.TeamOf(me.email)
	res, err := fn(repo, me)
	if nf := (*edit.NotFoundError)(nil); errors.As(err, &nf) && repo.Cluster == "" && repo.HasClusters() {
		err = fmt.Errorf("%w (without --cluster NAME, the jobs of %s/NAME/ are not read)", err, render.ClustersDir)
	}
	return repo, res, me, err
}

// commitEdit commits the edit's files, undoing the edit when the commit fails (a hook that
// refuses it, ...).
func commitEdit(ctx context.Context, s Streams, tree *gitTree, sub string, res *edit.Result, me who, paths []string) (string, error) {
	msg := res.CommitMessage(me.actor())
	sha, err := tree.commit(ctx, msg, paths)
	if err != nil {
		undo(ctx, tree, sub, res)
		return "", fmt.Errorf("nothing committed, the files are as they were: %w", err)
	}
	fmt.Fprintf(s.Out, "committed %s %s\n", humanize.Revision(sha), strings.SplitN(msg, "\n", 2)[0])
	for _, c := range res.Changes {
		fmt.Fprintf(s.Out, "  %s %s\n", c.Action, path.Join(sub, c.Path))
	}
	return sha, nil
}

// undo puts back the files of an edit that was not committed.
func undo(ctx context.Context, tree *gitTree, sub string, res *edit.Result) {
	for _, c := range res.Changes {
		_, _ = tree.git(ctx, "reset", "-q", "--", path.Join(sub, c.Path))
	}
	_ = edit.Revert(filesys.MakeFsOnDisk(), filepath.Join(tree.dir, filepath.FromSlash(sub)), res.Changes)
}

// onBranch makes the edit on a new branch in a work tree of its own, so that the checkout
// stays as it is: commits it there, pushes it with --push, and prints the URL of the pull
// request.
func (o *writeOptions) onBranch(ctx context.Context, s Streams, tree *gitTree, sub string, fn editFunc) error {
	if _, err := tree.git(ctx, "check-ref-format", "--branch", o.branch); err != nil {
		return fmt.Errorf("--branch %q: not a branch name", o.branch)
	}
	if _, err := tree.git(ctx, "rev-parse", "-q", "--verify", "refs/heads/"+o.branch); err == nil {
		return fmt.Errorf("branch %s exists: choose a new one", o.branch)
	}
	tmp, err := os.MkdirTemp("", "gpuctl-branch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	wt := filepath.Join(tmp, "tree")
	if _, err := tree.git(ctx, "worktree", "add", "-q", "-b", o.branch, wt, "HEAD"); err != nil {
		return err
	}
	branchTree := &gitTree{dir: wt}
	keep := false
	defer func() {
		_, _ = tree.git(ctx, "worktree", "remove", "--force", wt)
		if !keep {
			_, _ = tree.git(ctx, "branch", "-q", "-D", o.branch)
		}
	}()
	repo, res, me, err := o.edit(ctx, branchTree, sub, fn)
	if err != nil {
		return err
	}
	printWarnings(s, res)
	if err := edit.Apply(repo.FS, repo.Root, res.Changes); err != nil {
		return err
	}
	if _, err := commitEdit(ctx, s, branchTree, sub, res, me, treePaths(sub, res)); err != nil {
		return err
	}
	keep = true
	remote, base, err := tree.upstream(ctx)
	if err != nil {
		remote, base = "origin", tree.branch(ctx)
	}
	fmt.Fprintf(s.Out, "on new branch %s (your checkout stays on %s)\n", o.branch, orNone(tree.branch(ctx)))
	if o.push {
		if err := branchTree.push(ctx, remote, "refs/heads/"+o.branch+":refs/heads/"+o.branch); err != nil {
			return fmt.Errorf("committed on branch %s, not pushed: %w", o.branch, err)
		}
		_, _ = tree.git(ctx, "branch", "-q", "--set-upstream-to="+remote+"/"+o.branch, o.branch)
		fmt.Fprintf(s.Out, "pushed %s to %s\n", o.branch, remote)
	} else {
		fmt.Fprintf(s.Err, "not pushed: git push -u %s %s (or --push)\n", remote, o.branch)
	}
	remoteURL, _ := tree.git(ctx, "remote", "get-url", remote)
	if u := gitsource.PullRequestURL(remoteURL, o.branch, base); u != "" {
		fmt.Fprintf(s.Out, "open the pull request: %s\n", u)
	}
	return nil
}

// gitopsRoot is the directory of the repository that gpuctl renders, relative to the work
// tree's top (slash-separated, "." for the top): the first directory holding .gpuctl.yaml from
// start upwards, as render finds it, else the top.
func gitopsRoot(start, top string) (string, error) {
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || startsOutside(rel) {
		return ".", nil
	}
	for d := rel; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(top, d, keys.ConfigFile)); err == nil && fi.Mode().IsRegular() {
			return filepath.ToSlash(d), nil
		}
		if d == "." {
			return ".", nil
		}
	}
}

func startsOutside(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel)
}

// treePaths are the files of an edit relative to the work tree's top.
func treePaths(sub string, res *edit.Result) []string {
	out := make([]string, len(res.Changes))
	for i, c := range res.Changes {
		out[i] = path.Join(sub, c.Path)
	}
	return out
}

// printWarnings prints the warnings that the edit brings.
func printWarnings(s Streams, res *edit.Result) {
	for _, d := range res.Warnings {
		fmt.Fprintln(s.Err, d.Error())
	}
}

// printDiff prints the edit as a unified diff of its files, as git diff shows them.
func printDiff(s Streams, sub string, res *edit.Result) {
	for _, c := range res.Changes {
		p := path.Join(sub, c.Path)
		from, to := "a/"+p, "b/"+p
		switch c.Action {
		case edit.Created:
			from = "/dev/null"
		case edit.Deleted:
			to = "/dev/null"
		}
		fmt.Fprint(s.Out, unifiedDiff(from, to, string(c.Old), string(c.New)))
	}
}
