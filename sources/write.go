package sources

import (
	"context"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Writes: the daemon's API changes the files of a source as a person would. A Committer (a Git
// repository) commits and pushes the change, and the next fetch brings it; a Directory is
// written in place.

// Committer is a source whose files change by commits pushed to its remote (sources/git).
type Committer interface {
	// Commit fetches the newest commit of the followed branch, runs edit over its tree, makes
	// a commit of the files edit returns and pushes it: to the followed branch, or to a new
	// branch (CommitOptions.Branch). When the push is refused because the branch moved, it
	// fetches again and runs edit again over the new tree, at most MaxPushRetries times.
	// Commits are serialised with each other and with Fetch, and never touch the working
	// directory that Fetch checks out: a revision is never read half-written. An error of
	// edit is returned as it is; one of the remote is a *PushError, after which the remote
	// and the working directory are as they were.
	Commit(ctx context.Context, opts CommitOptions, edit EditFunc) (Committed, error)
}

// Directory is a source whose revisions are the files of a directory on this machine
// (sources/local), which writes change in place.
type Directory interface {
	// Root is the directory, absolute: the Dir of every revision.
	Root() string
}

// MaxPushRetries is how many times a Commit applies its edit again after its push was refused
// because the branch moved.
const MaxPushRetries = 3

// EditFunc makes an edit of a tree of files: fsys holds the tree (in memory) at dir, as a
// Revision's Dir would; it returns the commit message and the files to change. It may be
// called again over a newer tree when the remote moved.
type EditFunc func(fsys filesys.FileSystem, dir string) (*Edit, error)

// Edit is the change of one commit.
type Edit struct {
	Message string
	Files   []FileChange
}

// FileChange is one file of an edit: its new content, or its removal.
type FileChange struct {
	// Path is slash-separated and relative to the tree's dir.
	Path string
	// Data is the new content (Delete false).
	Data   []byte
	Delete bool
}

// Signature is the name and e-mail address of a commit's author or committer.
type Signature struct {
	Name, Email string
}

// CommitOptions say who makes a commit and where it goes.
type CommitOptions struct {
	Author, Committer Signature
	// Branch, when set, is a new branch (a short name) to push the commit to, made from the
	// followed branch; it must not exist. Empty: the followed branch.
	Branch string
}

// Committed is a commit that was pushed.
type Committed struct {
	// Commit is the commit's hash.
	Commit string
	// Branch is the branch it was pushed to (short name), and Base the followed branch.
	Branch, Base string
	// PullRequest is the page that opens a pull (GitHub) or merge (GitLab) request of a new
	// Branch into Base; "" for another forge or the followed branch.
	PullRequest string
	// Files are the paths of the changed files in the repository (slash-separated).
	Files []string
	// Dir is the directory of the edited tree in the repository ("" for its top): a FileChange's
	// Path is below it.
	Dir string
	// Attempts is how many times the edit was made (1 when the first push landed).
	Attempts int
}

// PushError is a commit that did not land on the remote: the remote could not be reached,
// refused the push, or moved more often than MaxPushRetries. Nothing was written.
type PushError struct {
	// Remote is the remote's URL, without credentials.
	Remote string
	Err    error
}

// Error names the remote and the cause.
func (e *PushError) Error() string {
	return fmt.Sprintf("push to %s: %v", e.Remote, e.Err)
}

func (e *PushError) Unwrap() error { return e.Err }
