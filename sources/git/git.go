package git

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gpuctl/gpuctl/sources"
)

// Defaults used by DefaultOptions.
const (
	// DefaultInterval is how often a Source polls the remote for a new commit.
	DefaultInterval = 60 * time.Second
	// DefaultJitter spreads polls by ± this fraction of the interval.
	DefaultJitter = 0.1
	// DefaultTimeout bounds each exchange with the remote: an ls-remote, a fetch, a push.
	DefaultTimeout = time.Minute
)

// ErrClosed is returned by Fetch after Close.
var ErrClosed = errors.New("git: source closed")

// Options configure a Source. Start from DefaultOptions: in a literal Options{}, a zero
// Interval disables polling and a zero Jitter means none.
type Options struct {
	// URL of the repository: https://host/org/repo.git, ssh://git@host/org/repo.git or
	// git@host:org/repo.git (the SSH user defaults to "git"). Credentials in an HTTP(S) URL
	// are used as basic auth when Auth sets none, and stripped from URL(), logs and errors;
	// prefer Auth's files, which can rotate.
	URL string
	// Ref to follow: a branch name ("main" or "refs/heads/main"), a tag ("refs/tags/v1"),
	// any other full ref, or a 40-hex commit to pin. Empty follows the remote's HEAD
	// (falling back to "main" when the server does not say where HEAD points).
	Ref string
	// Path is a slash-separated subdirectory of the repository to render; Revision.Dir
	// points there and Revision.Changed is relative to it. Empty means the whole tree.
	Path string
	// Dir is the working directory: the clone's object store in Dir/.git, and the tree that
	// Fetch checked out last in Dir/tree (a new one is written beside it, then takes its
	// place). It must be empty, missing, or a clone made by an earlier Source (it is then
	// reused, and whatever else it holds is removed by the first Fetch or Commit). Empty means
	// a temporary directory, removed by Close.
	Dir string
	// Auth selects the credentials.
	Auth AuthOptions
	// Interval between polls of the remote ref (an ls-remote, cheap). 0 disables polling.
	Interval time.Duration
	// Jitter spreads each wait to Interval ± Jitter·Interval (0.1 means ± 10 %).
	Jitter float64
	// Timeout bounds each exchange with the remote (an ls-remote, a fetch or clone, a push),
	// so that a server that accepts the connection and never answers fails it with "no answer
	// within 1m0s" instead of holding Fetch until the caller's deadline. 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Log receives debug and warning records; nil discards them.
	Log *slog.Logger
}

// DefaultOptions returns Options for url and ref that poll every DefaultInterval with
// DefaultJitter, each exchange with the remote bounded by DefaultTimeout.
func DefaultOptions(url, ref string) Options {
	return Options{URL: url, Ref: ref, Interval: DefaultInterval, Jitter: DefaultJitter, Timeout: DefaultTimeout}
}

// Source is a sources.Source over a Git repository, fetched with go-git into a working
// directory. It is safe for concurrent use; Fetch calls are serialised.
type Source struct {
	opts    Options
	remote  remoteURL
	log     *slog.Logger
	dir     string
	tempDir bool
	changes chan struct{}

	fetchMu  sync.Mutex // serialises Fetch and Commit; guards repo
	repo     *gogit.Repository
	removing sync.WaitGroup // removals of old checkouts under way (checkout.go)

	mu      sync.Mutex // guards the fields below
	target  target
	last    sources.Revision
	lastRef plumbing.Hash // the fetched ref's own hash (a tag object for annotated tags)
	closed  bool

	stop context.CancelFunc
	done chan struct{}
}

var (
	_ sources.Source  = (*Source)(nil)
	_ sources.Trigger = (*Source)(nil)
	_ RefMatcher      = (*Source)(nil)
)

// New validates opts and returns a Source. It does not touch the network: the first Fetch
// clones. When opts.Interval > 0 and the ref is not a pinned commit, a poller starts that
// signals Changes when the remote ref moves.
func New(opts Options) (*Source, error) {
	s, err := newSource(opts)
	if err != nil {
		return nil, err
	}
	if err := s.prepareDir(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.done = cancel, make(chan struct{})
	if s.opts.Interval > 0 && s.target.pin.IsZero() {
		go s.poll(ctx)
	} else {
		close(s.done)
	}
	return s, nil
}

// newSource checks opts and builds a Source without side effects.
func newSource(opts Options) (*Source, error) {
	remote, err := parseRemoteURL(opts.URL)
	if err != nil {
		return nil, err
	}
	tgt, err := parseRef(opts.Ref)
	if err != nil {
		return nil, fmt.Errorf("git: %s: %w", remote.display, err)
	}
	if opts.Path, err = cleanPath(opts.Path); err != nil {
		return nil, fmt.Errorf("git: %s: %w", remote.display, err)
	}
	if opts.Interval < 0 || opts.Jitter < 0 || opts.Jitter >= 1 || opts.Timeout < 0 {
		return nil, fmt.Errorf("git: %s: interval and timeout must be >= 0 and jitter in [0, 1)", remote.display)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if err := opts.Auth.validate(remote); err != nil {
		return nil, fmt.Errorf("git: %s: %w", remote.display, err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if remote.proto == "http" && opts.Auth.configured(remote) {
		log.Warn("credentials will be sent over plain http", "source", remote.display)
	}
	return &Source{
		opts:    opts,
		remote:  remote,
		log:     log.With("source", remote.display),
		target:  tgt,
		changes: make(chan struct{}, 1),
	}, nil
}

// prepareDir creates the working directory, or checks that a given one is usable.
func (s *Source) prepareDir() error {
	if s.opts.Dir == "" {
		dir, err := os.MkdirTemp("", "gpuctl-git-*")
		if err != nil {
			return fmt.Errorf("git: %s: %w", s.remote.display, err)
		}
		s.dir, s.tempDir = dir, true
		return nil
	}
	dir, err := filepath.Abs(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("git: %s: dir: %w", s.remote.display, err)
	}
	s.dir = dir
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("git: %s: dir: %w", s.remote.display, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return fmt.Errorf("git: %s: dir %s is neither empty nor a Git clone", s.remote.display, dir)
	}
	return nil
}

// cleanPath checks that p is a relative path inside the repository.
func cleanPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	p = path.Clean(filepath.ToSlash(p))
	if p == "." {
		return "", nil
	}
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("path %q must be relative and inside the repository", p)
	}
	return p, nil
}

// URL returns the repository URL without credentials, with the ref and path when set, for
// status and logs: https://host/org/repo.git@main//deploy.
func (s *Source) URL() string {
	u := s.remote.display
	if s.opts.Ref != "" {
		u += "@" + s.opts.Ref
	}
	if s.opts.Path != "" {
		u += "//" + s.opts.Path
	}
	return u
}

// Changes receives a value when the remote ref may have moved: a poll saw a new commit, or
// Trigger was called. Values are coalesced.
func (s *Source) Changes() <-chan struct{} { return s.changes }

// Trigger signals Changes, as a webhook or a sync request does.
func (s *Source) Trigger() { sources.Notify(s.changes) }

// MatchesRef reports whether a push to the full ref name (refs/heads/main) concerns this
// source. It is true when the followed ref is not known yet (remote HEAD before the first
// Fetch) and false for a pinned commit, which no push can move.
func (s *Source) MatchesRef(ref string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.target.pin.IsZero():
		return false
	case s.target.remote == "":
		return true
	}
	return string(s.target.remote) == ref
}

// Close stops the poller, waits for a running Fetch and the removal of old trees, and removes
// the working directory if New created it. Revisions returned earlier become invalid. Close is
// idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	closed := s.closed
	s.closed = true
	s.mu.Unlock()
	if closed {
		return nil
	}
	s.stop()
	<-s.done
	s.fetchMu.Lock() // wait for a running Fetch
	defer s.fetchMu.Unlock()
	s.repo = nil
	s.removing.Wait()
	if s.tempDir {
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("git: %s: close: %w", s.remote.display, err)
		}
	}
	return nil
}

// lastRevision returns the last good revision.
func (s *Source) lastRevision() sources.Revision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
