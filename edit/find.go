package edit

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/render"
)

// JobRef names a workload as the CLI's JOB does: a name, and its namespace when known.
type JobRef struct {
	Namespace string
	Name      string
}

// ParseJobRef reads a JOB argument: <namespace>.<name> (the job id; names have no dots), or a
// bare name, in namespace when it is not "".
func ParseJobRef(job, namespace string) JobRef {
	if ns, name, ok := strings.Cut(job, "."); ok && namespace == "" {
		return JobRef{Namespace: ns, Name: name}
	}
	return JobRef{Namespace: namespace, Name: job}
}

// String is the job id, or the bare name.
func (r JobRef) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "." + r.Name
}

// NotFoundError is a job that no file of the repository declares.
type NotFoundError struct {
	Ref JobRef
}

// Error names the job.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no file of the repository declares job %q", e.Ref.String())
}

// AmbiguousError is a bare name that workloads of several namespaces have.
type AmbiguousError struct {
	Name      string
	Workloads []Workload
}

// Error lists the namespaces and asks for one.
func (e *AmbiguousError) Error() string {
	var list []string
	for _, w := range e.Workloads {
		list = append(list, w.Namespace+" ("+w.File+")")
	}
	return fmt.Sprintf("job name %q is ambiguous: it is declared in %s; name one with -n NAMESPACE or as NAMESPACE.%s",
		e.Name, strings.Join(list, ", "), e.Name)
}

// found is a workload document of the repository.
type found struct {
	Workload
	doc *render.Document
}

// scan renders the repository as it is. Its documents are there even when some file has an
// error (which the edits do not make worse: see check).
func (r *Repo) scan() (*render.Result, error) {
	res, err := r.render(r.FS)
	var ve *render.ValidationError
	if err != nil && !errors.As(err, &ve) {
		return nil, err
	}
	return res, nil
}

// rel is a file as render shows it (below the Root), relative to the Root.
func (r *Repo) rel(display string) string {
	return filepath.ToSlash(relOr(r.Root, display))
}

// workloads lists the workload documents of a render.
func (r *Repo) workloads(res *render.Result) []found {
	var out []found
	for _, d := range res.Documents {
		if d.Workload == nil {
			continue
		}
		out = append(out, found{Workload{Kind: d.Kind, Name: d.Workload.Job.Name, Namespace: d.Namespace, File: r.rel(d.File)}, d})
	}
	return out
}

// find returns the one workload document that ref names.
func (r *Repo) find(res *render.Result, ref JobRef) (found, error) {
	var hits []found
	for _, w := range r.workloads(res) {
		if r.Namespaces != nil && !slices.Contains(r.Namespaces, w.Namespace) {
			continue
		}
		if w.Name == ref.Name && (ref.Namespace == "" || ref.Namespace == w.Namespace) {
			hits = append(hits, w)
		}
	}
	switch {
	case len(hits) == 0:
		return found{}, &NotFoundError{Ref: ref}
	case len(hits) > 1:
		sort.Slice(hits, func(i, j int) bool { return hits[i].Namespace+hits[i].File < hits[j].Namespace+hits[j].File })
		e := &AmbiguousError{Name: ref.Name}
		for _, h := range hits {
			e.Workloads = append(e.Workloads, h.Workload)
		}
		return found{}, e
	}
	return hits[0], nil
}
