package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/sources"
)

// The daemon's writes: the API's create, delete, pause, resume and scale of jobs, made as the
// CLI's write verbs make them (package edit), in the daemon's own copy of the source: a Git
// source gets a commit pushed with the daemon's credentials (sources.Committer), a directory
// is written in place. Then a sync is triggered, and the sync applies the new revision.

// The verbs of a write.
const (
	VerbCreate = "create"
	VerbDelete = "delete"
	VerbPause  = "pause"
	VerbResume = "resume"
	VerbScale  = "scale"
)

// WriteOptions configure the daemon's writes.
type WriteOptions struct {
	// Push lets writes commit and push to a Git source, with the source's credentials
	// (--git-push). Without it a Git source takes no write. A directory source is written
	// without it.
	Push bool
	// BranchPrefix, when set, pushes each write to a new branch, BranchPrefix followed by
	// <verb>-<job>-<time>-<random>, and answers with the page of its pull request, instead of
	// pushing to the followed branch (--git-push-branch): nothing applies until it is merged.
	BranchPrefix string
	// Domain is the e-mail domain of commit authors, NAME@Domain (default "gpuctl").
	Domain string
}

// Writer is who asks for a write, and where they may write: a token of the API.
type Writer struct {
	// Name is the token's name: the commit's author.
	Name string
	// Admin may write anywhere the namespace rules allow.
	Admin bool
	// AllNamespaces may write in the directory of any namespace (namespaces=*), not elsewhere.
	AllNamespaces bool
	// Namespaces are the namespaces in whose directories the writer may write, and whose jobs
	// it may change; none may write nothing.
	Namespaces []string
}

// may reports whether the writer may write in a namespace.
func (w Writer) may(ns string) bool {
	return w.Admin || w.AllNamespaces || slices.Contains(w.Namespaces, ns)
}

// WriteRequest is one write.
type WriteRequest struct {
	// Verb is VerbCreate, VerbDelete, VerbPause, VerbResume or VerbScale.
	Verb string
	By   Writer
	// Files are what a create adds (edit.Create).
	Files []edit.File
	// Namespace is the namespace whose directory (by the namespace rules) receives a create's
	// files; default the job.namespace the files name, else the writer's one namespace, else
	// default (an admin's only: render.Config.DefaultDir).
	Namespace string
	// Path is a directory, relative to the source's root, that receives a create's files
	// instead; a writer that is not admin may name only a directory of its namespaces.
	Path string
	// Job is the job of the other verbs.
	Job edit.JobRef
	// Kind is the kind a scale expects ("": any service); Replicas its count.
	Kind     string
	Replicas int
	// Message, when set, is the commit's subject line instead of edit's ("gpuctl: pause
	// notebook nb (alice-bot)"): the idle policy's pause gives its reason. The body still
	// names the changed workloads and files.
	Message string
}

// WriteResult is a write that landed.
type WriteResult struct {
	// Edit is what was changed: the workloads and the files (relative to the source's root).
	Edit *edit.Result
	// Commit is the commit pushed (a Git source); "" for a directory.
	Commit string
	// Branch is the branch it was pushed to; Proposed when that is a new branch, whose pull
	// request (PullRequest, GitHub and GitLab) must be merged before it applies.
	Branch      string
	Proposed    bool
	PullRequest string
	// Files are the changed files: paths in the repository, or in the directory.
	Files []string
	// Dir is the directory of the source's root in the repository ("" for its top, and for a
	// directory source): the Edit's paths are below it.
	Dir string
	// Attempts is how many times the edit was made (more than 1 when the branch moved).
	Attempts int
}

// ForbiddenError is a write that its writer may not make: another team's namespace or
// directory, or a token without namespaces.
type ForbiddenError struct {
	Reason string
}

// Error says why.
func (e *ForbiddenError) Error() string { return e.Reason }

// WritesDisabledError is a write to a daemon that takes none: a Git source without --git-push.
type WritesDisabledError struct {
	Reason string
}

// Error says how to enable writes.
func (e *WritesDisabledError) Error() string { return e.Reason }

// EditError is a write whose edit was refused: the request's fault (invalid files, a name that
// exists, an unknown job, a change that the review's policy or quota checks fail, ...). Err is
// edit's error (an *edit.NameExistsError, a *render.ValidationError, a *review.RefusedError,
// ...).
type EditError struct {
	Err error
}

func (e *EditError) Error() string { return e.Err.Error() }
func (e *EditError) Unwrap() error { return e.Err }

// Write makes a write, as one commit (a Git source, with WriteOptions.Push) or in the
// directory, then triggers a sync. Writes are made one at a time. Errors: *ForbiddenError,
// *EditError, *WritesDisabledError, *sources.PushError (the remote failed: nothing was
// written), or the daemon's own.
func (d *Daemon) Write(ctx context.Context, req WriteRequest) (*WriteResult, error) {
	if !req.By.Admin && !req.By.AllNamespaces && len(req.By.Namespaces) == 0 {
		return nil, &ForbiddenError{Reason: fmt.Sprintf("%q may not write: its token names no namespaces (token file: namespaces=NS1;NS2)", req.By.Name)}
	}
	switch req.Verb {
	case VerbCreate, VerbDelete, VerbPause, VerbResume, VerbScale:
	default:
		return nil, fmt.Errorf("unknown write %q", req.Verb)
	}
	if c, ok := d.opts.Source.(sources.Committer); ok {
		if !d.opts.Writes.Push {
			return nil, &WritesDisabledError{Reason: "the source is a Git repository, and gpuctl-reconciler does not push to it: " +
				"commit the file to Git, or start gpuctl-reconciler with --git-push to let it commit and push the API's writes with the source's credentials"}
		}
		return d.commit(ctx, c, req)
	}
	if dir, ok := d.opts.Source.(sources.Directory); ok {
		return d.writeDir(ctx, dir.Root(), req)
	}
	return nil, &WritesDisabledError{Reason: "the source " + d.opts.Source.URL() + " takes no writes: change its files where they come from"}
}

// commit makes the write as a commit pushed to a Git source.
func (d *Daemon) commit(ctx context.Context, c sources.Committer, req WriteRequest) (*WriteResult, error) {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	opts := sources.CommitOptions{Author: d.signature(req.By.Name), Committer: d.signature(keys.ReconcilerFieldManager)}
	if d.opts.Writes.BranchPrefix != "" {
		opts.Branch = d.opts.Writes.BranchPrefix + branchSuffix(req)
	}
	var res *edit.Result
	done, err := c.Commit(ctx, opts, func(fsys filesys.FileSystem, dir string) (*sources.Edit, error) {
		var err error
		if res, err = d.edit(fsys, dir, req); err != nil {
			return nil, err
		}
		e := &sources.Edit{Message: commitMessage(res, req, d.opts.Render.Cluster)}
		for _, ch := range res.Changes {
			e.Files = append(e.Files, sources.FileChange{Path: ch.Path, Data: ch.New, Delete: ch.Action == edit.Deleted})
		}
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	out := &WriteResult{Edit: res, Commit: done.Commit, Branch: done.Branch, Proposed: opts.Branch != "",
		PullRequest: done.PullRequest, Files: done.Files, Dir: done.Dir, Attempts: done.Attempts}
	d.opts.Log.Info("committed a write", "verb", req.Verb, "by", req.By.Name, "commit", humanize.Revision(done.Commit),
		"branch", done.Branch, "attempts", done.Attempts)
	if !out.Proposed {
		d.afterWrite(ctx)
	}
	return out, nil
}

// commitMessage is the commit message of a write: edit's, with the request's subject line
// when it gives one, and, for a daemon of a named cluster, the trailer "Cluster: NAME", so
// that git log tells which cluster's daemon wrote it (git log --format='%(trailers:key=Cluster)').
func commitMessage(res *edit.Result, req WriteRequest, cluster string) string {
	msg := res.CommitMessage(req.By.Name)
	if req.Message != "" {
		_, body, _ := strings.Cut(msg, "\n")
		msg = strings.Join(strings.Fields(req.Message), " ") + "\n" + body
	}
	if cluster != "" {
		msg += "\n" + clusterTrailer + ": " + cluster + "\n"
	}
	return msg
}

// clusterTrailer is the key of the Git trailer that names the cluster of a write's daemon.
const clusterTrailer = "Cluster"

// writeDir makes the write in the directory of a directory source, while no sync reads it.
func (d *Daemon) writeDir(ctx context.Context, root string, req WriteRequest) (*WriteResult, error) {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	d.tree.Lock()
	res, err := d.edit(d.opts.FS, root, req)
	if err == nil {
		if err = edit.Apply(d.opts.FS, root, res.Changes); err != nil {
			if rerr := edit.Revert(d.opts.FS, root, res.Changes); rerr != nil {
				err = fmt.Errorf("%w; and the files could not all be put back: %w", err, rerr)
			}
			err = fmt.Errorf("write %s: %w", root, err)
		}
	}
	d.tree.Unlock()
	if err != nil {
		return nil, err
	}
	d.opts.Log.Info("wrote a write", "verb", req.Verb, "by", req.By.Name, "files", res.Paths())
	d.afterWrite(ctx)
	return &WriteResult{Edit: res, Files: res.Paths(), Attempts: 1}, nil
}

// afterWrite asks for the sync that applies a write: through the source when this replica runs
// the loop, else with a sync request that the leader handles.
func (d *Daemon) afterWrite(ctx context.Context) {
	if t, ok := d.opts.Source.(sources.Trigger); ok && d.running.Load() {
		t.Trigger()
		return
	}
	if _, err := d.RequestSync(ctx); err != nil {
		d.opts.Log.Warn("cannot ask for a sync after a write; the next poll or interval applies it", "err", err)
	}
}

// edit makes the write's edit of the tree at dir on fsys, and checks that the writer may make
// it.
func (d *Daemon) edit(fsys filesys.FileSystem, dir string, req WriteRequest) (*edit.Result, error) {
	repo, err := edit.Open(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keys.ConfigFile, err)
	}
	if d.opts.Render.Config != nil { // the administrator's settings, as the sync renders with
		repo.Config = d.opts.Render.Config
	}
	// The files of the daemon's cluster, as the sync reads them: its jobs are found in
	// clusters/NAME/ too, and a team's new file goes there (edit.Repo.ClusterDir).
	repo.Cluster = d.opts.Render.Cluster
	repo.RenderTimeout = d.opts.RenderTimeout // the teams' files are rendered as a sync renders them
	w := req.By
	// No pull request reviews a write that applies: it passes the review's checks itself.
	reviewed := func(_, _ *render.Result) error { return nil }
	if d.applies() {
		reviewed = review.EditCheck(fsys, repo.Root, repo.Root)
	}
	repo.Review = func(base, after *render.Result) error {
		if req.Verb == VerbCreate && !w.Admin {
			if err := unquoted(w, base, after); err != nil {
				return err
			}
		}
		return reviewed(base, after)
	}
	if !w.Admin && !w.AllNamespaces {
		repo.Namespaces = w.Namespaces
	}
	var res *edit.Result
	if req.Verb == VerbCreate {
		res, err = d.create(repo, req)
	} else {
		if ns := req.Job.Namespace; ns != "" && !w.may(ns) {
			return nil, forbidNamespace(w, ns)
		}
		switch req.Verb {
		case VerbDelete:
			res, err = repo.Delete(req.Job)
		case VerbPause:
			res, err = repo.Pause(req.Job)
		case VerbResume:
			res, err = repo.Resume(req.Job)
		case VerbScale:
			res, err = repo.Scale(req.Kind, req.Job, req.Replicas)
		}
	}
	if err != nil {
		var fe *ForbiddenError
		if errors.As(err, &fe) {
			return nil, err
		}
		return nil, &EditError{Err: err}
	}
	for _, wl := range res.Workloads {
		if !w.may(wl.Namespace) {
			return nil, forbidNamespace(w, wl.Namespace)
		}
		if err := mayWriteDir(repo, w, path.Dir(wl.File)); err != nil {
			return nil, err
		}
	}
	for _, o := range res.Objects {
		if o.Namespace != "" && !w.may(o.Namespace) {
			return nil, forbidNamespace(w, o.Namespace)
		}
	}
	return res, nil
}

// applies reports whether a write goes where the sync applies it: to the followed branch of a
// Git source (not --git-push-branch, whose pull request is reviewed), or into a directory.
func (d *Daemon) applies() bool {
	_, committer := d.opts.Source.(sources.Committer)
	return !committer || d.opts.Writes.BranchPrefix == ""
}

// create adds the request's files to the directory of its namespace, or to its path. A file
// that names no namespace lands where the format puts it: in the writer's namespace when it
// has exactly one, else in namespace default, whose directory (render.Config.DefaultDir)
// only an admin writes in.
func (d *Daemon) create(repo *edit.Repo, req WriteRequest) (*edit.Result, error) {
	w := req.By
	kind, named, err := edit.Declared(req.Files) // the directory of namespace default is named after kind
	if err != nil {
		return nil, err
	}
	for _, n := range named {
		if !w.may(n) {
			return nil, forbidNamespace(w, n)
		}
	}
	ns := req.Namespace
	if ns == "" && len(named) > 0 {
		ns = named[0]
	}
	if req.Path != "" {
		if err := mayWriteDir(repo, w, req.Path); err != nil {
			return nil, err
		}
		return repo.Create(req.Files, edit.CreateOptions{Path: req.Path})
	}
	if ns == "" && len(w.Namespaces) == 1 && !w.Admin && !w.AllNamespaces {
		ns = w.Namespaces[0]
	}
	if ns == "" || ns == keys.DefaultNamespace { // docs/format.md: a job without job.namespace runs in default
		if !w.Admin {
			return nil, &ForbiddenError{Reason: fmt.Sprintf("%q may not write in namespace %s: only an admin writes its files; "+
				"give one of your namespaces (namespace, or job.namespace in the file)", w.Name, keys.DefaultNamespace)}
		}
		dir, err := repo.DefaultDir(kind)
		if err != nil {
			return nil, fmt.Errorf("%w; or give the path of the file", err)
		}
		return repo.Create(req.Files, edit.CreateOptions{Path: dir})
	}
	if !w.may(ns) {
		return nil, forbidNamespace(w, ns)
	}
	res, err := repo.Create(req.Files, edit.CreateOptions{Team: ns})
	if nt := (*edit.NoTeamDirError)(nil); errors.As(err, &nt) {
		err = fmt.Errorf("no namespace rule gives namespace %q a directory: give the path of the file (an admin's token), or ask for a rule in --namespace-map", ns)
	}
	return res, err
}

// unquoted refuses the workloads that a create of a writer that is not an admin adds (those of
// after that base does not have) in a namespace that no quota file names, when the tree has
// quota files: their jobs would be neither queued (queueing kueue: no ClusterQueue) nor held
// to a quota. A namespaces=* token may write in any mapped directory, also that of a
// namespace that the administrator has not given a quota yet.
func unquoted(w Writer, base, after *render.Result) error {
	quotas := map[string]bool{}
	for _, d := range after.Documents {
		if d.Quota != nil {
			for _, u := range d.Quota.Users {
				quotas[u.Name] = true
			}
		}
	}
	if len(quotas) == 0 {
		return nil // no team has a quota: the cluster does not use them
	}
	had := map[string]bool{}
	for _, d := range base.Documents {
		if d.Workload != nil {
			had[d.Namespace+"/"+d.Workload.Job.Name] = true
		}
	}
	for _, d := range after.Documents {
		if d.Workload == nil || had[d.Namespace+"/"+d.Workload.Job.Name] || quotas[d.Namespace] {
			continue
		}
		return &ForbiddenError{Reason: fmt.Sprintf("%q may not create job %s.%s: no quota names namespace %q (the quota files name %s), "+
			"so its jobs would run neither queued nor held to a quota; an admin gives the namespace a quota first",
			w.Name, d.Namespace, d.Workload.Job.Name, d.Namespace, strings.Join(slices.Sorted(maps.Keys(quotas)), ", "))}
	}
	return nil
}

// NamespaceOf returns the namespace whose directory holds a file (slash-separated, relative to
// the rendered directory, as the status names files) by the administrator's namespace rules
// (--namespace-map, --config), which match below clusters/NAME/ as at the root: for the API's
// cut of the status to a token's namespaces. False for a file that no rule maps, and without
// the administrator's rules (a repository's own .gpuctl.yaml is not read here).
func (d *Daemon) NamespaceOf(file string) (string, bool) {
	if d.opts.Render.Config == nil {
		return "", false
	}
	_, inner := render.SplitCluster(path.Dir(file))
	return d.opts.Render.Config.NamespaceFor(inner)
}

// mayWriteDir checks that a writer may write in a directory (relative to the root): an admin
// anywhere (the namespace rules, which the edit's render applies, hold it), another writer only
// in a directory that the namespace rules map to one of its namespaces (below clusters/NAME/
// as at the root), and that the daemon renders: a shared one, or one of its own cluster's
// directory clusters/NAME/ where the tree has it — never another cluster's, which this daemon
// neither checks nor applies, and no cluster's directory that the administrator has not made.
func mayWriteDir(repo *edit.Repo, w Writer, dir string) error {
	if w.Admin {
		return nil
	}
	cluster, inner := render.SplitCluster(dir)
	if cluster != "" {
		own := render.ClusterPath(repo.Cluster, ".") + "/"
		switch {
		case repo.Cluster == "":
			return &ForbiddenError{Reason: fmt.Sprintf("%q may not write in %s: it is the directory of cluster %s, and this reconciler is for no cluster (no --cluster): it writes in the shared directories only",
				w.Name, dir, cluster)}
		case cluster != repo.Cluster:
			return &ForbiddenError{Reason: fmt.Sprintf("%q may not write in %s: it is the directory of cluster %s, and this reconciler is cluster %s's: it writes in the shared directories and in %s only",
				w.Name, dir, cluster, repo.Cluster, own)}
		case !repo.FS.IsDir(filepath.Join(repo.Root, filepath.FromSlash(own))):
			return &ForbiddenError{Reason: fmt.Sprintf("%q may not write in %s: the repository has no %s, and only an admin adds a cluster's directory",
				w.Name, dir, own)}
		}
	}
	ns, mapped := repo.Config.NamespaceFor(inner)
	switch {
	case !mapped:
		return &ForbiddenError{Reason: fmt.Sprintf("%q may not write in %s: no namespace rule maps it to a namespace, and only an admin writes outside the namespaces' directories", w.Name, dir)}
	case !w.may(ns):
		return &ForbiddenError{Reason: fmt.Sprintf("%q may not write in %s: it is the directory of namespace %s", w.Name, dir, ns)}
	}
	return nil
}

func forbidNamespace(w Writer, ns string) error {
	return &ForbiddenError{Reason: fmt.Sprintf("%q may not write in namespace %q", w.Name, ns)}
}

// signature is a commit's author or committer: the name, and NAME@domain with the name's
// characters that an e-mail address cannot hold as dashes.
func (d *Daemon) signature(name string) sources.Signature {
	name = strings.Map(func(r rune) rune {
		if r < ' ' || r == '<' || r == '>' || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(name))
	local := strings.Trim(dashed(name, "._-+"), ".-")
	if local == "" {
		local = "unknown"
	}
	if name == "" {
		name = local
	}
	domain := d.opts.Writes.Domain
	if domain == "" {
		domain = "gpuctl"
	}
	return sources.Signature{Name: name, Email: local + "@" + domain}
}

// branchSuffix names a write's branch: <verb>-<job>-<UTC time>-<4 random hex digits>.
func branchSuffix(req WriteRequest) string {
	job := req.Job.Name
	if req.Verb == VerbCreate {
		job = "jobs"
		for _, f := range req.Files {
			if docs, _ := render.ParseFile(f.Name, f.Data); len(docs) > 0 && docs[0].Workload != nil && docs[0].Workload.Job.Name != "" {
				job = docs[0].Workload.Job.Name
				break
			}
		}
	}
	var b [2]byte
	_, _ = rand.Read(b[:])
	job = dashed(strings.ToLower(job), "-")
	return req.Verb + "-" + job + "-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// dashed is s with every character but ASCII letters, digits and those of keep as a dash.
func dashed(s, keep string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(keep, r) {
			return r
		}
		return '-'
	}, s)
}
