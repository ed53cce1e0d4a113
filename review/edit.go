package review

import (
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/render"
)

// Edits: the daemon's API writes and the CLI's write verbs commit to a branch that applies, and
// no pull request reviews them there. So they run a review's checks themselves, over the two
// renders that their edit made (package edit, Repo.Review): one implementation of the policy,
// quota and queue checks, the same messages as `gpuctl diff --base`.

// RefusedError is a change that a review fails: the error violations that it brings.
type RefusedError struct {
	// Violations are the violations that fail the review (Report.Failing).
	Violations []*Violation
}

// Error lists the violations as `gpuctl diff --base` prints them, one a line.
func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("the change fails the review of gpuctl-policy.yaml and the quotas (gpuctl diff --base would fail it):")
	for _, v := range e.Violations {
		b.WriteString("\n" + v.Where() + ": " + string(v.Severity) + ": [" + string(v.Rule) + "] " + v.Message)
	}
	return b.String()
}

// Edit names the two sides of an edit's review.
const (
	EditBase = "before the edit"
	EditHead = "after the edit"
)

// CheckRendered reviews a change that the caller rendered: base and head are the renders of
// one tree before and after the change, with the same configuration (the base's: a change
// cannot bring its own), each without the files whose errors would leave it without objects.
// Their files are named relative to the render's Root. policyFile and policy are the base's
// policy file, relative to that Root, and its content ("" and nil: none). It checks what
// Compose checks but the render's errors, which the caller judges (an edit refuses the errors
// it brings, and only those).
func CheckRendered(base, head *render.Result, policyFile string, policy []byte) *Report {
	var pol *Policy
	var lead []*Violation
	if policyFile != "" {
		pol, lead = readPolicy(policyFile, policy)
	}
	b, h := fromResult(base), fromResult(head)
	rep := compose(b, h, pol, lead, nil)
	rep.Path = "."
	rep.Base = RevisionInfo{Name: EditBase, Objects: len(b.Objects)}
	rep.Head = RevisionInfo{Name: EditHead, Objects: len(h.Objects)}
	return rep
}

// EditCheck is the check that an edit of the tree at root on fsys runs before it commits to a
// branch that applies (edit.Repo.Review): the review of the edit under the gpuctl-policy.yaml
// nearest to root, from root up to top (a directory at or above root; the quota, pool and
// queue checks run without one). It fails with a *RefusedError listing the error violations
// that the edit brings; those that the tree had before, no worse, do not refuse it.
func EditCheck(fsys filesys.FileSystem, root, top string) func(base, after *render.Result) error {
	file, data := "", []byte(nil)
	for dir := root; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, PolicyFile)
		if fsys.Exists(p) && !fsys.IsDir(p) {
			if b, err := fsys.ReadFile(p); err == nil {
				file, data = relTo(root, p), b
				break
			}
		}
		if dir == top || dir == filepath.Dir(dir) || !strings.HasPrefix(dir, top) {
			break
		}
	}
	return func(base, after *render.Result) error {
		if f := CheckRendered(base, after, file, data).Failing(); len(f) > 0 {
			return &RefusedError{Violations: f}
		}
		return nil
	}
}

// fromResult is a render of the caller's as a review's, its files relative to its Root.
func fromResult(res *render.Result) *Rendered {
	out := &Rendered{Objects: res.Objects, root: "."}
	for _, d := range res.Documents {
		c := *d
		c.File = relTo(res.Root, d.File)
		out.Documents = append(out.Documents, &c)
	}
	for _, d := range res.Diagnostics {
		c := *d
		c.File = relTo(res.Root, d.File)
		out.Diagnostics = append(out.Diagnostics, &c)
	}
	return out
}

// relTo is p (a path on a filesystem, or one relative to root already) relative to root,
// slash-separated.
func relTo(root, p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(p)
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return path.Clean(filepath.ToSlash(rel))
}
