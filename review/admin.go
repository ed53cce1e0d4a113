package review

import (
	"path"
	"slices"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
)

// isAdminFile reports whether p (a slash-separated path) is a file that only an admin may
// change, in whatever directory: the configuration (.gpuctl.yaml: namespace mapping, host
// paths, tenancy) and the review policy (gpuctl-policy.yaml).
func isAdminFile(p string) bool {
	b := path.Base(p)
	return b == keys.ConfigFile || b == PolicyFile
}

// withAdminFilesOf returns head with the admin files of base in place of its own, so that a
// change is rendered under the configuration it is proposed to, never under one it brings.
func withAdminFilesOf(head, base *Revision) *Revision {
	out := *head
	out.Files = make(map[string]string, len(head.Files))
	for p, c := range head.Files {
		if !isAdminFile(p) {
			out.Files[p] = c
		}
	}
	for p, c := range base.Files {
		if isAdminFile(p) {
			out.Files[p] = c
		}
	}
	return &out
}

// adminChanges reports each admin file that the change adds, removes or modifies (a symbolic
// link or an oversized file in its place counts as a modification): the review does not apply
// it, and an admin must review it.
func adminChanges(p *Policy, base, head *Revision) []*Violation {
	paths := map[string]bool{}
	for _, rev := range []*Revision{base, head} {
		for f := range rev.Files {
			paths[f] = paths[f] || isAdminFile(f)
		}
		for _, f := range rev.Skipped {
			paths[f] = paths[f] || isAdminFile(f)
		}
	}
	c := &checker{policy: p}
	for _, f := range sortedKeys(paths) {
		if !paths[f] {
			continue
		}
		b, inBase := base.Files[f]
		h, inHead := head.Files[f]
		bSkipped, hSkipped := slices.Contains(base.Skipped, f), slices.Contains(head.Skipped, f)
		var what string
		switch {
		case (inBase || bSkipped) && !inHead && !hSkipped:
			what = "removed"
		case !inBase && !bSkipped:
			what = "added"
		case b != h || bSkipped != hSkipped:
			what = "modified"
		default:
			continue
		}
		c.add(RulePolicy, "admin "+f, f, render.Pos{},
			"admin file %s is %s in this change: an admin must review it; until it is merged, both revisions are rendered and checked with the base revision's %s and %s",
			f, what, keys.ConfigFile, PolicyFile)
	}
	return c.out
}
