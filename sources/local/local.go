package local

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuctl/gpuctl/sources"
)

// DefaultDebounce is the quiet time after the last file event before Changes is signalled.
const DefaultDebounce = 100 * time.Millisecond

// MaxWait bounds the delay between the first event of a continuous stream and its signal on
// Changes: a stream that never pauses for Debounce is still signalled after MaxWait (or after
// Debounce, when Debounce is the longer).
const MaxWait = time.Second

// FullScanEvery bounds how long Fetch trusts the watch: between two walks of the whole tree, a
// Fetch hashes only the paths that file events named since the last one (and the symlinks,
// whose targets may change elsewhere). A change that makes no event here — a network
// filesystem written from another machine, a file written through a hard link from outside
// Root — is found by the next walk.
const FullScanEvery = time.Minute

// ErrClosed is returned by Fetch after Close.
var ErrClosed = errors.New("local: source closed")

var (
	_ sources.Source    = (*Source)(nil)
	_ sources.Trigger   = (*Source)(nil)
	_ sources.Directory = (*Source)(nil)
	_ sources.Digester  = (*Source)(nil)
	_ sources.Activity  = (*Source)(nil)
)

// Options configure a Source.
type Options struct {
	// Root is the directory whose files are the configuration. It must exist.
	Root string
	// Debounce is the quiet time after the last file event before Changes is signalled
	// (default DefaultDebounce).
	Debounce time.Duration
	// Log receives warnings (symlinks not followed, watches that could not be added) and
	// debug messages; nil discards them.
	Log *slog.Logger
}

// Source is a sources.Source over a directory tree on this machine, watched with fsnotify.
// Its methods are safe for concurrent use.
type Source struct {
	root    string // absolute Root: Revision.Dir and URL
	real    string // root with symlinks resolved: what is walked, watched and contained
	log     *slog.Logger
	changes chan struct{}
	watch   *watcher

	closeOnce sync.Once
	closeMu   sync.Mutex    // orders Trigger's signal before Close's drain
	closed    chan struct{} // closed by Close

	mu     sync.Mutex // held for a whole Fetch; guards the fields below
	cache  map[string]cached
	prev   map[string]digest // nil until the first successful Fetch
	last   sources.Revision
	warned map[string]string // relative path -> reason it was skipped, logged once
	links  map[string]bool   // the followed symlinks of prev, by relative path
	full   time.Time         // when the tree was last walked whole
	reads  int               // files read by the last scan, for tests
	walked bool              // the last Fetch walked the whole tree, for tests
	quiet  bool              // the last Fetch found no event since the one before (Quiet)

	// digests is prev, for Digest: a map that no Fetch writes once it is published.
	digests atomic.Pointer[map[string]digest]
}

// New checks that opts.Root is a directory, starts watching it and returns the Source. Close
// it to stop the watcher.
func New(opts Options) (*Source, error) {
	if opts.Debounce < 0 {
		return nil, fmt.Errorf("local: debounce %v: must not be negative", opts.Debounce)
	}
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	root, real, err := checkRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Source{
		root:    root,
		real:    real,
		log:     log.With("source", "dir:"+root),
		changes: make(chan struct{}, 1),
		closed:  make(chan struct{}),
		cache:   map[string]cached{},
		warned:  map[string]string{},
		links:   map[string]bool{},
	}
	s.watch, err = startWatcher(real, opts.Debounce, s.changes, s.log)
	if err != nil {
		return nil, fmt.Errorf("local: root %q: watch: %w", opts.Root, err)
	}
	return s, nil
}

// checkRoot returns the absolute and the symlink-free form of root, or an error naming it
// when it is missing or not a directory.
func checkRoot(root string) (abs, real string, err error) {
	if root == "" {
		return "", "", errors.New("local: root: empty path")
	}
	abs, err = filepath.Abs(root)
	if err != nil {
		return "", "", fmt.Errorf("local: root %q: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", "", fmt.Errorf("local: root %q: %w", root, err)
	}
	if !fi.IsDir() {
		return "", "", fmt.Errorf("local: root %q: not a directory", root)
	}
	real, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "", fmt.Errorf("local: root %q: %w", root, err)
	}
	return abs, real, nil
}

// Fetch hashes the tree and returns its revision: ID is a content hash, Dir is Root itself
// (the live directory, not a snapshot), Changed lists the files that differ from the previous
// successful Fetch (nil on the first, empty when nothing changed). When the tree cannot be
// read it returns the last good revision (zero if none) and the error; a file or directory
// that vanishes mid-walk makes it walk once more before giving up.
func (s *Source) Fetch(ctx context.Context) (sources.Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed() {
		return s.lastCopy(), ErrClosed
	}
	synced := s.watch.sync() // the events of every write before this Fetch are marked
	seen := s.watch.take()
	var files map[string]digest
	var err error
	if s.walked = s.prev == nil || !synced || seen.all || seen.dirty[s.real] || time.Since(s.full) >= FullScanEvery; !s.walked {
		if s.quiet = len(seen.dirty) == 0; s.quiet && len(s.links) == 0 {
			// No event, no link to follow: the revision is the last one (a sync request,
			// a webhook, the interval), and its ID is not hashed again.
			s.last.Changed, s.last.Time, s.reads = []string{}, time.Now(), 0
			return s.lastCopy(), nil
		}
		files, err = s.rescan(ctx, s.prev, slices.Sorted(maps.Keys(seen.dirty)))
		if err != nil { // the events' paths could not be read: the whole tree is
			s.log.Debug("local: changed paths could not be hashed; walking the tree", "err", err)
			s.walked = true
		}
	}
	s.quiet = !s.walked && len(seen.dirty) == 0
	if s.walked {
		began := time.Now()
		files, err = s.scan(ctx)
		if errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
			s.log.Debug("local: tree changed during the walk; walking again", "err", err)
			files, err = s.scan(ctx)
		}
		if err == nil {
			s.full = began
		}
	}
	if err != nil {
		return s.lastCopy(), fmt.Errorf("%s: fetch: %w", s.URL(), err)
	}
	rev := sources.Revision{ID: treeID(files), Dir: s.root, Time: time.Now()}
	if s.prev != nil {
		rev.Changed = changed(s.prev, files)
	}
	s.prev, s.last = files, rev
	s.digests.Store(&files)
	return s.lastCopy(), nil
}

// Digest returns the SHA-256 of the file at rel (slash-separated, relative to Root) as the
// last successful Fetch read it, and whether that revision has the file (sources.Digester).
func (s *Source) Digest(rel string) ([sha256.Size]byte, bool) {
	files := s.digests.Load() // not s.mu: a render asks for every file, and a Fetch holds s.mu
	if files == nil {
		return [sha256.Size]byte{}, false
	}
	d, ok := (*files)[rel]
	return d.sum, ok
}

// lastCopy returns the last good revision with a Changed slice the caller may keep.
func (s *Source) lastCopy() sources.Revision {
	rev := s.last
	rev.Changed = slices.Clone(rev.Changed)
	return rev
}

// Changes receives a value after file events under Root (debounced) and after Trigger.
func (s *Source) Changes() <-chan struct{} { return s.changes }

// Activity receives a value at the first file event of a burst, Debounce before Changes.
func (s *Source) Activity() <-chan struct{} { return s.watch.activity }

// Quiet reports whether the last Fetch found no file event since the Fetch before it and
// trusted the watch (it did not walk the tree): nothing changed between the two.
func (s *Source) Quiet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quiet
}

// Root is the directory, absolute: every revision's Dir, and where the daemon's API writes.
func (s *Source) Root() string { return s.root }

// URL returns "dir:" and the absolute Root.
func (s *Source) URL() string { return "dir:" + s.root }

// Trigger signals Changes as if a file had changed; it does nothing after Close.
func (s *Source) Trigger() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if !s.isClosed() {
		sources.Notify(s.changes)
	}
}

// Close stops the watcher and its goroutine and drops a pending signal; Changes receives
// nothing afterwards. Calling it again does nothing and returns nil.
func (s *Source) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closeMu.Lock()
		close(s.closed)
		s.closeMu.Unlock()
		err = s.watch.close()
		select {
		case <-s.changes:
		default:
		}
	})
	return err
}

func (s *Source) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}
