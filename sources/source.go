package sources

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
)

// Revision is one fetched state of a source's files.
type Revision struct {
	// ID identifies the content: a commit hash for Git, a content hash for a directory.
	ID string `json:"id"`
	// Dir holds the files of the revision, to render from. It stays valid until the next
	// Fetch or Close of the source that returned it.
	Dir string `json:"-"`
	// Message describes the revision: a commit's subject line, or empty.
	Message string `json:"message,omitempty"`
	// Author is a commit's author, or empty.
	Author string `json:"author,omitempty"`
	// Time is when the revision was made (commit time) or read.
	Time time.Time `json:"time"`
	// Changed lists the files (slash-separated, relative to Dir) that differ from the previous
	// revision Fetch returned; nil when unknown (the first fetch).
	Changed []string `json:"changed,omitempty"`
}

// Source yields revisions of a tree of configuration files.
type Source interface {
	// Fetch brings the newest revision into a directory and returns it. When fetching fails
	// it returns the last good revision (zero if none) together with the error, so that
	// callers keep applying what they had.
	Fetch(ctx context.Context) (Revision, error)
	// Changes receives a value whenever there may be a new revision: a file event, a webhook,
	// a poll tick. Values are coalesced: one pending signal at most.
	Changes() <-chan struct{}
	// URL describes where the files come from, for status and logs (no credentials).
	URL() string
	// Close releases the source's watchers, timers and files.
	Close() error
}

// Digester is implemented by sources that know the content of the files of the revision Fetch
// last returned: the SHA-256 of each, by slash-separated path relative to the revision's Dir.
// A render need not read again a file whose content it has seen (render.Options.Digest).
type Digester interface {
	// Digest returns the SHA-256 of the file at rel as the last Fetch read it, and whether
	// that revision has the file.
	Digest(rel string) (sum [sha256.Size]byte, ok bool)
}

// Trigger is implemented by sources that can be told to fetch now (webhooks, sync requests).
type Trigger interface {
	// Trigger signals Changes as if the source had noticed a change.
	Trigger()
}

// Activity is implemented by sources that see a change begin before they signal it: a
// directory source signals Changes once file events pause (the debounce), and Activity at the
// first event of a burst. A consumer may read the files meanwhile (a render ahead of the
// sync), as long as what it uses is what Fetch returns once Changes is signalled.
type Activity interface {
	// Activity receives a value at the first event of a burst, before Changes does; values
	// are coalesced.
	Activity() <-chan struct{}
	// Quiet reports whether nothing changed in the tree between the last two Fetches (no
	// event came between them, and the last one trusted the watch): whatever was read of the
	// tree between them is the tree of both.
	Quiet() bool
}

// Notify sends on a coalescing channel (capacity 1) without blocking.
func Notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// UncheckableError is a revision whose tree holds a path that Git refuses to check out (.git
// in another case, an NTFS or HFS+ spelling of it, a .. segment): Fetch does not check it
// out and returns the last good revision with this error, and the next revision that no
// longer holds the path is fetched as ever; a commit on it is refused.
type UncheckableError struct {
	// Remote is the repository's URL, without credentials; Revision the commit.
	Remote   string
	Revision string
	// Path is the first path refused, in the repository; Reason why.
	Path   string
	Reason string
}

// Error names the revision, the path and why, and says how to get out.
func (e *UncheckableError) Error() string {
	return fmt.Sprintf("%s@%s cannot be checked out: path %q: %s; gpuctl neither applies nor writes on it: remove the path in a new commit",
		e.Remote, humanize.Revision(e.Revision), e.Path, e.Reason)
}
