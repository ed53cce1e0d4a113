package edit

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// File is a file to create: its content, kept byte for byte, and its name.
type File struct {
	// Name is the file's name as the person gave it (a path on their machine, "-" for
	// standard input); diagnostics name it so.
	Name string
	Data []byte
	// Target is the name of the file created, without a directory (Create refuses one, as it
	// refuses .. and absolute paths); default Name. When both are empty or "-", the file is
	// named after its first workload, <job.name>.yaml.
	Target string
}

// CreateOptions say where Create puts the files.
type CreateOptions struct {
	// Path is the directory (slash-separated, relative to the Root) to create the files in.
	// Empty: the directory that the namespace rules give Team.
	Path string
	// Team is the team whose directory receives the files when Path is empty (Config.TeamDir).
	Team string
}

// NameExistsError is a workload that a create would add and that the repository already
// declares in the same namespace.
type NameExistsError struct {
	Workload
	// Input is the file of the create that declares it.
	Input string
}

// Error names both files.
func (e *NameExistsError) Error() string {
	return fmt.Sprintf("%s: %s %q already exists in namespace %q (%s): choose another job.name, or edit that file",
		e.Input, e.Kind, e.Name, e.Namespace, e.File)
}

// NoTeamDirError is a create without a path for a team that no namespace rule gives a
// directory.
type NoTeamDirError struct {
	Team string
}

// Error says what to do.
func (e *NoTeamDirError) Error() string {
	if e.Team == "" {
		return "no team and no path: give --team or --path (or list your user.email under teams: in " + keys.ConfigFile + ")"
	}
	return fmt.Sprintf("no namespace rule of %s gives team %q a directory: give --path", keys.ConfigFile, e.Team)
}

// Create adds files to the repository: each is validated as `gpuctl validate` validates the
// repository once it is there (every error, with the file's own name, line and column), put
// in opts.Path or its team's directory, and refused when the file exists or one of its
// workloads has the name of one of the repository's in the same namespace. The files' bytes
// are kept as given.
func (r *Repo) Create(files []File, opts CreateOptions) (*Result, error) {
	dir, err := r.createDir(opts)
	if err != nil {
		return nil, err
	}
	if r, err = r.forDir(dir); err != nil {
		return nil, err
	}
	res := &Result{Verb: "create"}
	rename := map[string]string{}
	for _, f := range files {
		name, err := targetName(f)
		if err != nil {
			return nil, err
		}
		rel := path.Join(dir, name)
		if _, dup := rename[rel]; dup {
			return nil, &PathError{Path: rel, Reason: "two of the files would be written there"}
		}
		abs, err := r.target(rel)
		if err != nil {
			return nil, err
		}
		if r.FS.Exists(abs) {
			return nil, &FileExistsError{Path: rel}
		}
		rename[rel] = inputName(f)
		res.Changes = append(res.Changes, Change{Path: rel, Action: Created, New: f.Data})
	}
	base, err := r.scan()
	if err != nil {
		return nil, err
	}
	introduced, after, err := r.check(base, res.Changes, rename)
	if err != nil {
		return nil, err
	}
	if res.Workloads, err = r.created(base, after, rename); err != nil {
		return nil, err
	}
	errs, warnings := split(introduced)
	if len(errs) > 0 {
		return nil, render.NewValidationError(errs)
	}
	if err := r.review(base, after, res.Changes); err != nil {
		return nil, err
	}
	res.Objects = r.createdObjects(after, rename)
	res.Warnings = warnings
	return res, nil
}

// createdObjects lists the documents of the files created that are no workload: plain
// Kubernetes objects (with the namespace that the render gave them), pools and quotas.
func (r *Repo) createdObjects(after *render.Result, rename map[string]string) []Workload {
	var out []Workload
	for _, d := range after.Documents {
		file := r.rel(d.File)
		if _, isNew := rename[file]; !isNew || d.Workload != nil {
			continue
		}
		switch {
		case d.Pool != nil:
			out = append(out, Workload{Kind: d.Kind, Name: d.Pool.Name, File: file})
			continue
		case d.Quota != nil:
			out = append(out, Workload{Kind: d.Kind, Name: d.Quota.Name, File: file})
			continue
		case d.Manifest == nil:
			continue
		}
		m := &unstructured.Unstructured{Object: d.Manifest}
		o := Workload{Kind: m.GetKind(), Name: m.GetName(), Namespace: m.GetNamespace(), File: file}
		for _, u := range after.Objects {
			if u.GetKind() == o.Kind && u.GetName() == o.Name && u.GetAnnotations()[keys.Source] == file {
				o.Namespace = u.GetNamespace()
				break
			}
		}
		out = append(out, o)
	}
	return out
}

// createDir is the directory that Create writes to.
func (r *Repo) createDir(opts CreateOptions) (string, error) {
	if opts.Path != "" {
		dir := strings.TrimSuffix(filepath.ToSlash(opts.Path), "/")
		if dir == "." {
			return "", nil
		}
		if _, err := r.targetDir(dir); err != nil {
			return "", err
		}
		return dir, nil
	}
	if opts.Team == "" {
		return "", &NoTeamDirError{}
	}
	if errs := validation.IsDNS1123Label(opts.Team); len(errs) > 0 {
		return "", fmt.Errorf("team %q is not a namespace name: %s", opts.Team, errs[0])
	}
	dir, ok := r.Config.TeamDir(opts.Team)
	if !ok {
		return "", &NoTeamDirError{Team: opts.Team}
	}
	return r.ClusterDir(dir)
}

// Declared is what files say of where they belong: the gpuctl kind of their first workload
// ("" when they have none), and the namespaces that their workloads name (job.namespace),
// each once, in the order of the files. A file that does not parse is a
// *render.ValidationError with its name, line and column.
func Declared(files []File) (kind string, namespaces []string, err error) {
	for _, f := range files {
		docs, diags := render.ParseFile(inputName(f), f.Data)
		if err := render.NewValidationError(diags); err != nil {
			return "", nil, err
		}
		for _, doc := range docs {
			if doc.Workload == nil {
				continue
			}
			if kind == "" {
				kind = doc.Kind
			}
			if ns := doc.Workload.Job.Namespace; ns != "" && !slices.Contains(namespaces, ns) {
				namespaces = append(namespaces, ns)
			}
		}
	}
	return kind, namespaces, nil
}

// DefaultDir is the directory (relative to the Root; "." for the Root itself, as
// CreateOptions.Path takes it) where a create puts files whose workloads land in namespace
// default, kind being the kind of their first workload (Declared): the configuration's
// (render.Config.DefaultDir: defaultNamespaceDir, else the directory named after the kind), in
// the Cluster's directory (ClusterDir). The API's create and gpuctl create both place such
// files with it.
func (r *Repo) DefaultDir(kind string) (string, error) {
	dir, err := r.Config.DefaultDir(kind)
	if err != nil {
		return "", err
	}
	if dir, err = r.ClusterDir(dir); err != nil {
		return "", err
	}
	if dir == "" {
		return ".", nil
	}
	return dir, nil
}

// forDir is the repository as a create in dir (relative to the Root) renders it: with the
// files of cluster NAME for a directory of clusters/NAME/ (the Repo's Cluster, or NAME when
// it has none), so that the render checks the new files. A directory of another cluster than
// the Repo's, and clusters/ itself (a file there belongs to no cluster), are a *PathError.
func (r *Repo) forDir(dir string) (*Repo, error) {
	of, _ := render.SplitCluster(dir)
	switch {
	case dir == render.ClustersDir:
		return nil, &PathError{Path: dir, Reason: fmt.Sprintf("a file directly in %s/ belongs to no cluster: give %s/NAME/...", render.ClustersDir, render.ClustersDir)}
	case of == "" || of == r.Cluster:
		return r, nil
	case r.Cluster != "":
		return nil, &PathError{Path: dir, Reason: fmt.Sprintf("is in the directory of cluster %q, not of cluster %q", of, r.Cluster)}
	}
	c := *r
	c.Cluster = of
	return &c, nil
}

// inputName is how diagnostics name an input file.
func inputName(f File) string {
	if f.Name == "" || f.Name == "-" {
		return "<stdin>"
	}
	return f.Name
}

// targetName is the name of the file created from f: its base name, which render must read
// as a source; or, for standard input, its first workload's name.
func targetName(f File) (string, error) {
	target := f.Target
	if target == "" {
		target = f.Name
	}
	if target == "" || target == "-" {
		docs, diags := render.ParseFile(inputName(f), f.Data)
		if err := render.NewValidationError(diags); err != nil {
			return "", err
		}
		for _, d := range docs {
			if d.Workload != nil && d.Workload.Job.Name != "" {
				return d.Workload.Job.Name + ".yaml", nil
			}
		}
		return "", fmt.Errorf("%s: no workload with a job.name to name the file after", inputName(f))
	}
	name := filepath.ToSlash(target)
	if strings.Contains(name, "/") || name == "." || name == ".." {
		return "", &PathError{Path: target, Reason: "a file name may not hold a directory; give the directory with --path"}
	}
	ext := path.Ext(name)
	switch {
	case strings.HasPrefix(name, "."), name == "kustomization.yaml", name == "kustomization.yml", name == render.PolicyFileName:
		return "", &PathError{Path: target, Reason: "gpuctl does not read a file of this name as a source"}
	case ext != ".yaml" && ext != ".yml":
		return "", &PathError{Path: target, Reason: "name it *.yaml: gpuctl reads only .yaml and .yml files"}
	}
	return name, nil
}

// created lists the workloads of the files created, and refuses a name that the repository
// has in the same namespace: a Job, Deployment or StatefulSet that it declares or renders.
func (r *Repo) created(base, after *render.Result, rename map[string]string) ([]Workload, error) {
	existing := r.workloads(base)
	rendered := map[[2]string]string{}
	for _, o := range base.Objects {
		switch o.GetKind() {
		case "Job", "Deployment", "StatefulSet":
			rendered[[2]string{o.GetNamespace(), o.GetName()}] = o.GetAnnotations()[keys.Source]
		}
	}
	var out []Workload
	for _, w := range r.workloads(after) {
		input, isNew := rename[w.File]
		if !isNew {
			continue
		}
		for _, e := range existing {
			if e.Name == w.Name && e.Namespace == w.Namespace {
				return nil, &NameExistsError{Workload: e.Workload, Input: input}
			}
		}
		if src, ok := rendered[[2]string{w.Namespace, w.Name}]; ok {
			return nil, &NameExistsError{Workload: Workload{Kind: w.Kind, Name: w.Name, Namespace: w.Namespace, File: src}, Input: input}
		}
		out = append(out, w.Workload)
	}
	return out, nil
}
