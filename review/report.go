package review

import (
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/render"
)

// RevisionInfo describes one side of a report.
type RevisionInfo struct {
	// Name is the revision as given, or WorkingTree.
	Name string `json:"name"`
	// Commit is the resolved commit; empty for the working tree.
	Commit string `json:"commit,omitempty"`
	// Files is the number of files read.
	Files int `json:"files"`
	// Objects is the number of objects rendered.
	Objects int `json:"objects"`
	// Excluded lists files left out of the comparison because they do not render.
	Excluded []string `json:"excluded,omitempty"`
	// Failed is set when the revision did not render at all.
	Failed bool `json:"failed,omitempty"`
}

// Label returns "name (commit)", or the short commit when the name is a hash, or the name.
func (r RevisionInfo) Label() string {
	switch {
	case r.Commit == "":
		return r.Name
	case strings.HasPrefix(r.Commit, r.Name):
		return humanize.Revision(r.Commit)
	}
	return r.Name + " (" + humanize.Revision(r.Commit) + ")"
}

// Summary counts what a report holds.
type Summary struct {
	Added    int `json:"added"`
	Changed  int `json:"changed"`
	Removed  int `json:"removed"`
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	// Preexisting counts the violations that the base revision has too.
	Preexisting int `json:"preexisting"`
}

// Report is the result of a review: the object changes, the GPU budget and the violations.
type Report struct {
	// Path is the compared directory, relative to the repository root.
	Path string `json:"path"`
	// Cluster is the cluster both revisions were rendered for (Options.Cluster), "" for none.
	Cluster    string        `json:"cluster,omitempty"`
	Base       RevisionInfo  `json:"base"`
	Head       RevisionInfo  `json:"head"`
	Summary    Summary       `json:"summary"`
	Changes    []*ObjectDiff `json:"changes"`
	Budget     Budget        `json:"budget"`
	Violations []*Violation  `json:"violations"`
	// Policy is the policy the checks used (the base revision's when it has one).
	Policy *Policy `json:"policy,omitempty"`
}

// HasChanges reports whether any object differs.
func (r *Report) HasChanges() bool { return len(r.Changes) > 0 }

// Failing returns the error violations that the change introduced: those that fail a review.
func (r *Report) Failing() []*Violation {
	var out []*Violation
	for _, v := range r.Violations {
		if v.Severity == render.SeverityError && !v.Preexisting {
			out = append(out, v)
		}
	}
	return out
}

// summarize fills the summary and sorts violations: errors first, then by file and line.
func (r *Report) summarize() {
	s := Summary{}
	for _, c := range r.Changes {
		switch c.Action {
		case DiffAdded:
			s.Added++
		case DiffChanged:
			s.Changed++
		case DiffRemoved:
			s.Removed++
		}
	}
	sort.SliceStable(r.Violations, func(i, j int) bool {
		a, b := r.Violations[i], r.Violations[j]
		if (a.Severity == render.SeverityError) != (b.Severity == render.SeverityError) {
			return a.Severity == render.SeverityError
		}
		if a.Preexisting != b.Preexisting {
			return !a.Preexisting
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	for _, v := range r.Violations {
		switch {
		case v.Preexisting:
			s.Preexisting++
		case v.Severity == render.SeverityError:
			s.Errors++
		default:
			s.Warnings++
		}
	}
	r.Summary = s
}
