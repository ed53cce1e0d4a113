package review

import (
	"fmt"
	"path"
	"strings"

	"github.com/gpuctl/gpuctl/render"
)

// Options say what to compare.
type Options struct {
	// Dir is a directory inside the repository (default: the current directory).
	Dir string
	// Path is the compared directory, relative to the repository root (default: the root).
	Path string
	// Base is the base revision (required): a branch, tag, commit, HEAD~1, origin/main.
	Base string
	// Head is the head revision; empty: the working tree.
	Head string
	// Cluster, when set, renders both revisions for that cluster (render.Options.Cluster):
	// the shared files and clusters/<Cluster>/, so the budget is that cluster's.
	Cluster string
}

// Run reads, renders and compares the two revisions and checks the head.
func Run(opts Options) (*Report, error) {
	if opts.Base == "" {
		return nil, fmt.Errorf("review: a base revision is required")
	}
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	repo, err := Open(dir)
	if err != nil {
		return nil, err
	}
	under := path.Clean("/" + opts.Path)[1:]
	if under == "" {
		under = "."
	}
	base, err := repo.Revision(opts.Base, under)
	if err != nil {
		return nil, err
	}
	var head *Revision
	if opts.Head == "" {
		head, err = repo.WorkingTree(under)
	} else {
		head, err = repo.Revision(opts.Head, under)
	}
	if err != nil {
		return nil, err
	}
	return composeFor(base, head, under, opts.Cluster)
}

// Compose renders and compares two revisions that were already read; under is the compared
// directory relative to the repository root.
func Compose(base, head *Revision, under string) (*Report, error) {
	return composeFor(base, head, under, "")
}

// composeFor is Compose with both revisions rendered for cluster ("": none).
func composeFor(base, head *Revision, under, cluster string) (*Report, error) {
	if cluster != "" && !hasCluster(base.Files, cluster) && !hasCluster(head.Files, cluster) {
		return nil, fmt.Errorf("cluster %q: neither %s nor %s has a directory %s/%s/", cluster, base.Name, head.Name, render.ClustersDir, cluster)
	}
	b, err := renderRevision(base, under, cluster)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", base.Name, err)
	}
	h, err := renderRevision(withAdminFilesOf(head, base), under, cluster)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", head.Name, err)
	}
	pol, polViolations := basePolicy(base, under)
	polViolations = append(polViolations, adminChanges(pol, base, head)...)
	polViolations = append(polViolations, renderViolations(pol, h)...)
	rep := compose(b, h, pol, polViolations, skippedViolations(pol, head))
	rep.Path, rep.Cluster, rep.Base, rep.Head = under, cluster, info(base, b), info(head, h)
	return rep, nil
}

// compose compares two rendered revisions and checks the head against the policy: lead are the
// violations found before the checks of the rendered objects (the policy file's, the admin
// files', the render's), tail those found after (the files skipped).
func compose(b, h *Rendered, pol *Policy, lead, tail []*Violation) *Report {
	rep := &Report{
		Changes:    Compare(b.Objects, h.Objects),
		Budget:     ComputeBudget(b.Objects, h.Objects),
		Violations: lead,
		Policy:     pol,
	}
	if rep.Changes == nil {
		rep.Changes = []*ObjectDiff{}
	}
	for _, c := range rep.Changes {
		if c.Source != "" {
			root := h.root
			if c.Action == DiffRemoved {
				root = b.root
			}
			c.Source = path.Join(root, c.Source)
		}
	}
	rep.Violations = append(rep.Violations, markPreexisting(Check(pol, h), Check(pol, b))...)
	rep.Violations = append(rep.Violations, tail...)
	blameQuota(rep, h)
	if rep.Violations == nil {
		rep.Violations = []*Violation{}
	}
	rep.summarize()
	return rep
}

func info(rev *Revision, r *Rendered) RevisionInfo {
	return RevisionInfo{Name: rev.Name, Commit: rev.Commit, Files: len(rev.Files), Objects: len(r.Objects),
		Excluded: r.Excluded, Failed: r.Failed}
}

// markPreexisting flags the head violations that the base has too, no worse.
func markPreexisting(head, base []*Violation) []*Violation {
	had := map[string]int64{}
	for _, v := range base {
		had[string(v.Rule)+" "+v.subject] = v.amount
	}
	for _, v := range head {
		amount, ok := had[string(v.Rule)+" "+v.subject]
		v.Preexisting = ok && v.amount <= amount
	}
	return head
}

// basePolicy parses the base revision's policy file: a change cannot loosen the policy it is
// checked against (see adminChanges).
func basePolicy(base *Revision, under string) (*Policy, []*Violation) {
	file := findPolicy(base.Files, under)
	if file == "" {
		return nil, nil
	}
	return readPolicy(file, []byte(base.Files[file]))
}

// readPolicy parses a policy file. An invalid policy file is a violation; the checks then run
// without a policy.
func readPolicy(file string, data []byte) (*Policy, []*Violation) {
	p, err := ParsePolicy(file, data)
	if err == nil {
		return p, nil
	}
	var out []*Violation
	for _, e := range unwrapAll(err) {
		pe, _ := e.(*PolicyError)
		v := &Violation{Rule: RulePolicy, Severity: render.SeverityError, File: file, Message: e.Error()}
		if pe != nil {
			v.Line, v.Message = pe.Line, pe.Message
		}
		out = append(out, v)
	}
	return nil, out
}

func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// skippedViolations reports the head's YAML files that were too large or not regular files.
func skippedViolations(p *Policy, head *Revision) []*Violation {
	c := &checker{policy: p}
	for _, f := range head.Skipped {
		if ext := path.Ext(f); ext == ".yaml" || ext == ".yml" {
			c.add(RuleSkipped, f, f, render.Pos{}, "not read: a symbolic link, a submodule or larger than %d bytes", MaxFileSize)
		}
	}
	return c.out
}

// blameQuota points each new quota violation at the first file of the change that raises the
// team's GPUs, naming the quota's own line in the message.
func blameQuota(rep *Report, head *Rendered) {
	for _, v := range rep.Violations {
		ns, ok := strings.CutPrefix(v.subject, "quota/")
		if v.Rule != RuleQuota || v.Preexisting || !ok {
			continue // a queue's violation already points at its workload
		}
		for _, c := range rep.Changes {
			if c.Namespace != ns || c.GPUsAfter <= c.GPUsBefore || c.Source == "" {
				continue
			}
			if v.File != "" {
				v.Message += fmt.Sprintf(" (set at %s)", v.Where())
			}
			v.File, v.Line = c.Source, sourceLine(head, c)
			v.Message += fmt.Sprintf("; %s raises it by %d", c.Ref.String(), c.GPUsAfter-c.GPUsBefore)
			break
		}
	}
}

// sourceLine finds the resources.gpu line of the workload document behind a change.
func sourceLine(head *Rendered, c *ObjectDiff) int {
	for _, d := range head.Documents {
		if d.Workload != nil && d.File == c.Source && d.Namespace == c.Namespace && d.Workload.Job.Name == c.Name {
			return d.At("resources.gpu").Line
		}
	}
	return 0
}
