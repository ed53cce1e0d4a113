package git

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// pinnedRef is where a pinned commit fetched by hash is recorded locally.
const pinnedRef plumbing.ReferenceName = "refs/gpuctl/pinned"

var commitHash = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)

// target is what a Source follows: a remote ref and where its fetch is stored locally, or
// a pinned commit. The zero target means the remote's HEAD, resolved at the first fetch.
type target struct {
	remote plumbing.ReferenceName // refs/heads/main, refs/tags/v1, ...
	local  plumbing.ReferenceName // refs/remotes/origin/main, refs/tags/v1, ...
	pin    plumbing.Hash
}

// parseRef interprets Options.Ref.
func parseRef(ref string) (target, error) {
	switch {
	case ref == "":
		return target{}, nil
	case commitHash.MatchString(ref):
		return target{pin: plumbing.NewHash(strings.ToLower(ref))}, nil
	}
	name := plumbing.ReferenceName(ref)
	if !strings.HasPrefix(ref, "refs/") {
		name = plumbing.NewBranchReferenceName(ref)
	}
	if err := name.Validate(); err != nil || ref == "HEAD" {
		return target{}, fmt.Errorf("invalid ref %q", ref)
	}
	switch {
	case name.IsBranch():
		return branchTarget(name), nil
	case name.IsTag():
		return target{remote: name, local: name}, nil
	}
	return target{remote: name, local: plumbing.ReferenceName("refs/gpuctl/" +
		strings.TrimPrefix(string(name), "refs/"))}, nil
}

// branchTarget follows the branch name into a remote-tracking ref.
func branchTarget(name plumbing.ReferenceName) target {
	return target{remote: name, local: plumbing.NewRemoteReferenceName("origin", name.Short())}
}

// refSpec is the forced refspec that fetches the target: history rewrites are taken as they
// are, never refused as non-fast-forward.
func (t target) refSpec() config.RefSpec {
	return config.RefSpec("+" + string(t.remote) + ":" + string(t.local))
}
