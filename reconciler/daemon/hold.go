package daemon

import (
	"path/filepath"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/render"
)

// heldScopes are the held namespaces of a render of the revision in dir, each held at the
// revision it was held at before, or else at the last one applied (whose state of the
// namespace stays).
func heldScopes(held []render.HeldScope, prev Status, dir string) []HeldScope {
	var out []HeldScope
	for _, h := range held {
		hs := HeldScope{Namespace: h.Namespace, Revision: prev.AppliedRevision}
		for _, p := range prev.Held {
			if p.Namespace == h.Namespace {
				hs.Revision = p.Revision
			}
		}
		for _, diag := range h.Errors { // paths relative to the revision, as in the repository
			hs.Errors = appendBounded(hs.Errors, strings.TrimPrefix(diag.Error(), dir+string(filepath.Separator)))
		}
		out = append(out, hs)
	}
	return out
}

// heldNote is what a sync's message adds for its held namespaces: how many, not which (the
// status lists them under Held, which the API cuts to what a team's token may see).
func heldNote(held []HeldScope) string {
	if len(held) == 0 {
		return ""
	}
	return "; " + humanize.Plural(len(held), "namespace") + " held at the last good revision for errors in its files (see held)"
}

// heldDigest is the digest of a revision's objects with the namespaces it holds: the same
// objects with a namespace held (its objects kept) or emptied (pruned) are not the same
// desired state.
func heldDigest(digest string, held []string) string {
	if len(held) == 0 {
		return digest
	}
	return digest + "+held:" + strings.Join(held, ",")
}
