package edit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/repopath"
	"github.com/gpuctl/gpuctl/render"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Repo is a tree of gpuctl files as the edits see it: the files below Root on FS, and the
// configuration of .gpuctl.yaml at Root.
type Repo struct {
	// FS holds the files (filesys.MakeFsOnDisk(), or one in memory).
	FS filesys.FileSystem
	// Root is the absolute directory that namespace rules and source annotations are relative
	// to: the directory of .gpuctl.yaml.
	Root string
	// Config is the parsed .gpuctl.yaml (empty when there is none).
	Config *render.Config
	// Cluster is the cluster the edits are for (render.Options.Cluster: gpuctl create
	// --cluster, the daemon's --cluster), in a tree of several clusters (docs/fleet.md): the
	// edits read the shared files and those of clusters/<Cluster>/, and Create puts a file
	// of a team's directory, without a path, in clusters/<Cluster>/ (ClusterDir). "": the
	// shared files only, as render reads a tree with clusters/ for no cluster.
	Cluster string
	// Namespaces, when not nil, are the only namespaces whose workloads delete, pause, resume
	// and scale find: a bare name resolves among them, and a job of another namespace is not
	// found (the daemon's API sets a team token's namespaces). nil: every namespace.
	Namespaces []string
	// RenderTimeout bounds each render an edit makes of the tree (default DefaultRenderTimeout):
	// a team's files may be written to make a render slow, and a write must still end.
	RenderTimeout time.Duration
	// Review, when set, judges each edit once its render found no error that it brings: base
	// and after are the renders of the tree before and after the edit, each without the files
	// whose errors would leave it without objects; an error refuses the edit. The daemon's API
	// writes and the CLI's write verbs that commit to a branch that applies set it to the
	// review's checks (review.EditCheck): gpuctl-policy.yaml and the quotas.
	Review func(base, after *render.Result) error
}

// DefaultRenderTimeout bounds a render of an edit when Repo.RenderTimeout is not set.
const DefaultRenderTimeout = time.Minute

// render renders the tree on fsys (the Repo's, or one with an edit's changes), within
// RenderTimeout.
func (r *Repo) render(fsys filesys.FileSystem) (*render.Result, error) {
	timeout := r.RenderTimeout
	if timeout <= 0 {
		timeout = DefaultRenderTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return render.New(render.Options{Config: r.Config, Root: r.Root, Cluster: r.Cluster}).RenderContext(ctx, fsys, r.Root)
}

// HasClusters reports whether the tree has clusters/ at the Root: a repository of several
// clusters, whose files outside clusters/ every cluster runs.
func (r *Repo) HasClusters() bool {
	return r.FS.IsDir(filepath.Join(r.Root, render.ClustersDir))
}

// ClusterDir is the directory (relative to the Root) where a new file of dir goes, dir being
// where the namespace rules put it (a team's directory, namespace default's): below
// clusters/<Cluster>/ in a tree with clusters/, so that only that cluster runs it; dir itself
// without a Cluster, or in a tree without clusters/ (every cluster gets it whole). The
// Cluster must be one of the tree (render.CheckCluster): its error otherwise.
func (r *Repo) ClusterDir(dir string) (string, error) {
	if r.Cluster == "" {
		return dir, nil
	}
	if err := render.CheckCluster(r.FS, r.Root, r.Cluster); err != nil {
		return "", err
	}
	if !r.HasClusters() {
		return dir, nil
	}
	return render.ClusterPath(r.Cluster, dir), nil
}

// Open reads the configuration of the tree at root: root/.gpuctl.yaml, if there is one. A
// configuration with errors is a *render.ValidationError naming file:line:field.
func Open(fsys filesys.FileSystem, root string) (*Repo, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	r := &Repo{FS: fsys, Root: abs, Config: &render.Config{}}
	f := filepath.Join(abs, keys.ConfigFile)
	if !fsys.Exists(f) {
		return r, nil
	}
	data, err := fsys.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keys.ConfigFile, err)
	}
	cfg, diags := render.ParseConfig(keys.ConfigFile, data)
	if err := render.NewValidationError(diags); err != nil {
		return nil, err
	}
	r.Config = cfg
	return r, nil
}

// Action is what a Change does to its file.
type Action string

// The actions of a Change.
const (
	Created  Action = "created"
	Modified Action = "modified"
	Deleted  Action = "deleted"
)

// Change is the new content of one file.
type Change struct {
	// Path is the file, slash-separated and relative to the Root.
	Path   string `json:"path"`
	Action Action `json:"action"`
	// Old is the content before (nil for a file created); New after (nil for one deleted).
	Old []byte `json:"old,omitempty"`
	New []byte `json:"new,omitempty"`
}

// Workload names the workload an edit is about.
type Workload struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// File is the file that declares it, slash-separated and relative to the Root.
	File string `json:"file"`
}

// ID is the workload's job id, <namespace>.<name>.
func (w Workload) ID() string { return w.Namespace + "." + w.Name }

// ObjectID is ID, or the name alone of an object of no namespace (cluster scoped, or an
// admin's pool or quota): how a commit message and the API's answer name what an edit made.
func (w Workload) ObjectID() string {
	if w.Namespace == "" {
		return w.Name
	}
	return w.ID()
}

// Result is what an edit does: the files it changes, and what it is about. Nothing is written
// until Apply.
type Result struct {
	// Verb is create, delete, pause, resume or scale.
	Verb string `json:"verb"`
	// Workloads are the workloads created, deleted, paused, resumed or scaled.
	Workloads []Workload `json:"workloads"`
	// Objects are the plain Kubernetes objects that a create adds (a ConfigMap, a pool's or a
	// quota's file: no gpuctl workload), Kind being the object's kind ("" Namespace: cluster
	// scoped).
	Objects []Workload `json:"objects,omitempty"`
	// Replicas is the replica count a scale sets.
	Replicas int      `json:"replicas,omitempty"`
	Changes  []Change `json:"changes"`
	// Warnings are the warnings of the files after the edit that they did not have before.
	Warnings []*render.Diagnostic `json:"warnings,omitempty"`
}

// CommitMessage is the conventional message of the edit's commit: a subject such as
// "gpuctl: create training qwen2-7b-sft (alice)" or "gpuctl: create ConfigMap settings
// (alice-bot)", with actor, who made it, in parentheses; and a line per workload or object
// with its id (<namespace>.<name>) and file.
func (r *Result) CommitMessage(actor string) string {
	var what []string
	for _, w := range r.Named() {
		what = append(what, w.Kind+" "+w.Name)
	}
	subject := "gpuctl: " + r.Verb + " " + strings.Join(what, ", ")
	if r.Verb == "scale" {
		subject += fmt.Sprintf(" to %d", r.Replicas)
	}
	subject += " (" + actor + ")"
	var body []string
	for _, w := range r.Named() {
		body = append(body, w.ObjectID()+": "+w.File)
	}
	return subject + "\n\n" + strings.Join(body, "\n") + "\n"
}

// Named are the workloads and the objects of the edit.
func (r *Result) Named() []Workload {
	return append(slices.Clone(r.Workloads), r.Objects...)
}

// Paths are the changed files, relative to the Root.
func (r *Result) Paths() []string {
	out := make([]string, len(r.Changes))
	for i, c := range r.Changes {
		out[i] = c.Path
	}
	return out
}

// Apply writes the changes below root on fsys: creates (with their directories), rewrites
// and removes files. Each path is checked again as Create checks it (no .., no symbolic link
// out of root), and a file created must not exist.
func Apply(fsys filesys.FileSystem, root string, changes []Change) error {
	r := &Repo{FS: fsys, Root: root}
	for _, c := range changes {
		abs, err := r.target(c.Path)
		if err != nil {
			return err
		}
		switch c.Action {
		case Created:
			if fsys.Exists(abs) {
				return &FileExistsError{Path: c.Path}
			}
			if err := fsys.MkdirAll(filepath.Dir(abs)); err != nil {
				return fmt.Errorf("%s: %w", c.Path, err)
			}
			fallthrough
		case Modified:
			if err := fsys.WriteFile(abs, c.New); err != nil {
				return fmt.Errorf("%s: %w", c.Path, err)
			}
		case Deleted:
			if err := fsys.RemoveAll(abs); err != nil {
				return fmt.Errorf("%s: %w", c.Path, err)
			}
		default:
			return fmt.Errorf("%s: unknown action %q", c.Path, c.Action)
		}
	}
	return nil
}

// Revert puts back the files of changes below root on fsys as they were before Apply wrote
// them: a file created is removed, one modified or deleted gets its Old content back. It goes
// on past an error, and returns them all.
func Revert(fsys filesys.FileSystem, root string, changes []Change) error {
	var errs []error
	for _, c := range changes {
		abs := filepath.Join(root, filepath.FromSlash(c.Path))
		if c.Action == Created {
			if fsys.Exists(abs) {
				errs = append(errs, fsys.RemoveAll(abs))
			}
			continue
		}
		if err := fsys.MkdirAll(filepath.Dir(abs)); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, fsys.WriteFile(abs, c.Old))
	}
	return errors.Join(errs...)
}

// PathError is a path that would leave the repository, or that is not one gpuctl writes
// (repopath.Check): Path and Reason, and Error() is `path "x": reason`.
type PathError = repopath.Error

// target checks a path (slash-separated, relative to the Root) of a file that an edit writes
// and returns it as an absolute path: it must be relative and clean (no ..), its directories
// must not go through a symbolic link (out of the Root, or at all: Git does not follow one),
// and it must not be a directory or a symbolic link itself.
func (r *Repo) target(rel string) (string, error) {
	if err := checkRel(rel); err != nil {
		return "", err
	}
	if err := r.noLinks(rel, path.Dir(rel)); err != nil {
		return "", err
	}
	abs := filepath.Join(r.Root, filepath.FromSlash(rel))
	if r.FS.Exists(abs) && r.FS.IsDir(abs) {
		return "", &PathError{Path: rel, Reason: "is a directory"}
	}
	if linkedFile(r.FS, abs) {
		return "", &PathError{Path: rel, Reason: "is a symbolic link"}
	}
	return abs, nil
}

// targetDir checks a directory that an edit writes to as target checks a file's.
func (r *Repo) targetDir(rel string) (string, error) {
	if err := checkRel(rel); err != nil {
		return "", err
	}
	if err := r.noLinks(rel, rel); err != nil {
		return "", err
	}
	return filepath.Join(r.Root, filepath.FromSlash(rel)), nil
}

// checkRel refuses a path that an edit may not write: one that is not relative and clean, or
// that repopath.Check refuses (a dot directory or file, a name Git refuses).
func checkRel(rel string) error {
	if filepath.IsAbs(rel) || filepath.VolumeName(rel) != "" {
		return &PathError{Path: rel, Reason: "must be relative to the repository"}
	}
	return repopath.Check(rel)
}

// noLinks refuses a directory dir (relative to the Root; "." for the Root) of the path rel
// whose part that exists resolves, with its symbolic links followed, anywhere but where it is.
func (r *Repo) noLinks(rel, dir string) error {
	root, err := r.real(r.Root)
	if err != nil {
		return err
	}
	d := filepath.Join(r.Root, filepath.FromSlash(dir))
	for !r.FS.Exists(d) && d != r.Root && d != filepath.Dir(d) {
		if linkedFile(r.FS, d) { // a dangling link
			return &PathError{Path: rel, Reason: "goes through a symbolic link (" + filepath.ToSlash(relOr(r.Root, d)) + ")"}
		}
		d = filepath.Dir(d)
	}
	real, err := r.real(d)
	if err != nil {
		return err
	}
	if want := filepath.Join(root, relOr(r.Root, d)); real != want {
		reason := "goes through a symbolic link (" + filepath.ToSlash(relOr(r.Root, d)) + ")"
		if real != root && !isBelow(real, root) {
			reason = "leaves the repository through a symbolic link (" + filepath.ToSlash(relOr(r.Root, d)) + ")"
		}
		return &PathError{Path: rel, Reason: reason}
	}
	return nil
}

// real resolves a directory's symbolic links (on disk; a filesystem in memory has none).
func (r *Repo) real(dir string) (string, error) {
	d, _, err := r.FS.CleanedAbs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", relOr(r.Root, dir), err)
	}
	return string(d), nil
}

// linkedFile reports whether abs is a symbolic link (dangling or not): the filesystem's Walk
// reports what it finds without following links.
func linkedFile(fsys filesys.FileSystem, abs string) bool {
	dir, base := filepath.Dir(abs), filepath.Base(abs)
	if !fsys.IsDir(dir) {
		return false
	}
	linked := false
	_ = fsys.Walk(dir, func(p string, info os.FileInfo, err error) error {
		switch {
		case err != nil || p == dir:
			return nil
		case filepath.Base(p) == base:
			linked = info.Mode()&os.ModeSymlink != 0
		}
		if info.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	return linked
}

// isBelow reports whether p is a path below dir (both clean and absolute).
func isBelow(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// relOr is p relative to base, or p.
func relOr(base, p string) string {
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return rel
}

// FileExistsError is a file that a create would write and that exists.
type FileExistsError struct {
	Path string
}

// Error says which file exists.
func (e *FileExistsError) Error() string {
	return fmt.Sprintf("%s exists: choose another file name, or edit that file", e.Path)
}
