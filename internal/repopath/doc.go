// Package repopath holds the rules for the paths of a Git repository's files, in one place:
// Check, the paths that a write of gpuctl (the API's writes, the CLI's write verbs, a commit of
// the Git source) may create or change; and CheckTree, the paths that Git refuses to check out,
// which a revision fetched from a remote must not hold.
//
//	repopath.Check("teams/alice/train.yaml")   // nil
//	repopath.Check("teams/alice/.x/cm.yaml")   // path "teams/alice/.x/cm.yaml": ".x" starts with a dot: ...
//	repopath.CheckTree("teams/alice/.x/a.yaml") // nil: Git checks it out (render skips it)
//	repopath.CheckTree("teams/alice/.GIT/a.yaml") // path "teams/alice/.GIT/a.yaml": ".GIT" is .git to Git ...
package repopath
