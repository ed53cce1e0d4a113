package local

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/gpuctl/gpuctl/sources"
)

// rootPoll is how often a watcher whose root was removed or renamed looks for it again.
const rootPoll = 250 * time.Millisecond

// debouncer turns a burst of events into one signal: Debounce after the last event, but no
// later than max after the first.
type debouncer struct {
	quiet, max time.Duration
	start      time.Time // first event of the pending burst; zero when none is pending
}

// event records an event at now and returns how long to wait before signalling.
func (d *debouncer) event(now time.Time) time.Duration {
	if d.start.IsZero() {
		d.start = now
	}
	wait := d.quiet
	if left := d.start.Add(d.max).Sub(now); left < wait {
		wait = max(left, 0)
	}
	return wait
}

// fire ends the pending burst.
func (d *debouncer) fire() { d.start = time.Time{} }

// watcher watches every directory under root that is not hidden and signals changes after
// each burst of events. Its fields other than fs and done belong to its goroutine.
type watcher struct {
	fs       *fsnotify.Watcher
	root     string // symlink-free
	log      *slog.Logger
	changes  chan struct{}
	activity chan struct{} // signalled at the first event of a burst
	deb      debouncer
	watched  map[string]bool // directories added to fs
	done     chan struct{}   // closed by close
	stopped  chan struct{}   // closed when run returns

	// seen holds what the events said since the last take.
	seenMu sync.Mutex
	seen   seen
	blind  bool // a directory could not be watched

	// barrier is a private directory, outside the tree, on the same watch (see sync); ""
	// when none could be made.
	barrier    string
	barrierSeq atomic.Uint64
	barrierCh  chan uint64 // the sequence numbers of the barrier files whose events arrived
}

// seen is what a watcher's events say of the tree since the last Fetch took them.
type seen struct {
	// dirty are the paths (absolute, not hidden) that events named: only they may differ.
	dirty map[string]bool
	// all: events may have been lost (an overflow, the root gone and back, a directory that
	// could not be watched): any path may differ.
	all bool
}

// mark records that an event named path.
func (w *watcher) mark(path string) {
	w.seenMu.Lock()
	if w.seen.dirty == nil {
		w.seen.dirty = map[string]bool{}
	}
	w.seen.dirty[path] = true
	w.seenMu.Unlock()
}

// markAll records that events may have been lost.
func (w *watcher) markAll() {
	w.seenMu.Lock()
	w.seen.all = true
	w.seenMu.Unlock()
}

// take returns what the events said since the last take, and starts again. A watcher that
// could not watch a directory says "all" every time: nothing tells what changed there.
func (w *watcher) take() seen {
	w.seenMu.Lock()
	defer w.seenMu.Unlock()
	s := w.seen
	w.seen = seen{all: w.blind}
	return s
}

// startWatcher watches the tree at root and starts the goroutine that signals changes.
func startWatcher(root string, quiet time.Duration, changes chan struct{}, log *slog.Logger) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{
		fs:       fw,
		root:     root,
		log:      log,
		changes:  changes,
		activity: make(chan struct{}, 1),
		deb:      debouncer{quiet: quiet, max: max(MaxWait, quiet)},
		watched:  map[string]bool{},
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
		seen:     seen{all: true},
	}
	if err := w.addTree(root); err != nil {
		fw.Close()
		return nil, err
	}
	w.startBarrier()
	go w.run()
	return w, nil
}

// close stops the goroutine and releases the watches.
func (w *watcher) close() error {
	close(w.done)
	err := w.fs.Close()
	<-w.stopped
	if w.barrier != "" {
		os.RemoveAll(w.barrier)
	}
	return err
}

// barrierWait bounds how long sync waits for its own event.
const barrierWait = time.Second

// startBarrier makes and watches the private directory of sync; without it (no writable
// temporary directory), sync always says false and every Fetch walks the tree.
func (w *watcher) startBarrier() {
	dir, err := os.MkdirTemp("", "gpuctl-watch-")
	if err == nil {
		if err = w.fs.Add(dir); err != nil {
			os.RemoveAll(dir)
		}
	}
	if err != nil {
		w.log.Debug("local: no barrier directory; every fetch walks the tree", "err", err)
		return
	}
	w.barrier, w.barrierCh = dir, make(chan uint64, 8)
}

// sync returns once every event of a change made before it was called has been handled
// (marked), and true; false when it cannot tell. It creates a file in the barrier directory
// and waits for its event: one inotify instance queues its events in the order they happen,
// and run handles them in that order.
func (w *watcher) sync() bool {
	if w.barrier == "" {
		return false
	}
	for drained := false; !drained; { // numbers of earlier syncs that gave up waiting
		select {
		case <-w.barrierCh:
		default:
			drained = true
		}
	}
	n := w.barrierSeq.Add(1)
	name := filepath.Join(w.barrier, strconv.FormatUint(n, 10))
	f, err := os.Create(name)
	if err != nil {
		return false
	}
	f.Close()
	defer os.Remove(name)
	timeout := time.NewTimer(barrierWait)
	defer timeout.Stop()
	for {
		select {
		case got := <-w.barrierCh:
			if got >= n {
				return true
			}
		case <-timeout.C:
			w.log.Debug("local: the barrier's event did not arrive; walking the tree")
			return false
		case <-w.stopped:
			return false
		}
	}
}

// barrierEvent handles an event of the barrier directory, and reports whether ev is one.
func (w *watcher) barrierEvent(ev fsnotify.Event) bool {
	if w.barrier == "" || filepath.Dir(ev.Name) != w.barrier {
		return false
	}
	if n, err := strconv.ParseUint(filepath.Base(ev.Name), 10, 64); err == nil && ev.Has(fsnotify.Create) {
		select {
		case w.barrierCh <- n:
		default: // nobody waits (sync drains what is left before it waits)
		}
	}
	return true
}

// run handles events until close: each relevant event (re)starts the debounce timer, whose
// expiry signals changes.
func (w *watcher) run() {
	defer close(w.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var poll *time.Ticker
	var pollC <-chan time.Time // non-nil while the root is gone
	defer func() {
		if poll != nil {
			poll.Stop()
		}
	}()
	for {
		relevant := false
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if w.barrierEvent(ev) {
				continue
			}
			relevant = w.handle(ev)
			if relevant && pollC == nil && !w.watched[w.root] {
				poll = time.NewTicker(rootPoll)
				pollC = poll.C
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			relevant = w.handleError(err)
		case <-pollC:
			if relevant = w.findRoot(); relevant {
				poll.Stop()
				poll, pollC = nil, nil
			}
		case <-timer.C:
			w.deb.fire()
			sources.Notify(w.changes)
		}
		if relevant {
			if w.deb.start.IsZero() {
				sources.Notify(w.activity)
			}
			timer.Reset(w.deb.event(time.Now()))
		}
	}
}

// handle updates the watches for one event and reports whether it may change the tree.
func (w *watcher) handle(ev fsnotify.Event) bool {
	if !within(w.root, ev.Name) {
		return false
	}
	rel, err := filepath.Rel(w.root, ev.Name)
	if err != nil || hidden(rel) {
		return false
	}
	w.log.Debug("local: event", "op", ev.Op.String(), "path", filepath.ToSlash(rel))
	w.mark(ev.Name)
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		// The watches on a directory that moved still report its old path, and one that
		// was removed is gone: forget them; a directory created in its place is added.
		w.forget(ev.Name)
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			// Files may have been created inside before the watch was added; the walk
			// after the signal finds them.
			if err := w.addTree(ev.Name); err != nil {
				w.log.Warn("local: cannot watch directory", "path", filepath.ToSlash(rel), "err", err)
				w.goBlind()
			}
		}
	}
	return true
}

// handleError logs a watcher error. After an overflow, events may have been lost, among them
// the creation of directories: it adds the whole tree again and reports true.
func (w *watcher) handleError(err error) bool {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.log.Warn("local: file events lost; rescanning", "err", err)
		w.markAll()
		if err := w.addTree(w.root); err != nil {
			w.log.Warn("local: cannot watch root", "err", err)
			w.goBlind()
		}
		return true
	}
	w.log.Warn("local: watcher error", "err", err)
	return false
}

// findRoot adds the tree again when the root directory is back, and reports whether it is.
func (w *watcher) findRoot() bool {
	if fi, err := os.Stat(w.root); err != nil || !fi.IsDir() {
		return false
	}
	if err := w.addTree(w.root); err != nil {
		w.log.Debug("local: root back but not watchable yet", "err", err)
		return false
	}
	w.log.Info("local: root directory is back; watching it again")
	w.markAll()
	return true
}

// addTree watches dir and every directory below it that is not hidden. Symlinks to
// directories are not followed. It returns an error only when dir itself cannot be watched.
func (w *watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && p == dir:
			return err
		case err != nil:
			w.log.Warn("local: cannot list directory", "path", relSlash(w.root, p), "err", err)
			w.goBlind()
			return nil
		case !d.IsDir():
			return nil
		case p != w.root && ignored(d.Name()):
			return filepath.SkipDir
		}
		// The watch is added before the directory is listed: nothing created in between
		// goes unseen.
		if err := w.fs.Add(p); err != nil {
			if p == dir {
				return err
			}
			w.log.Warn("local: cannot watch directory", "path", relSlash(w.root, p), "err", err)
			w.goBlind()
			return filepath.SkipDir
		}
		w.watched[p] = true
		return nil
	})
}

// goBlind records that a directory is not watched: from then on every Fetch walks the tree.
func (w *watcher) goBlind() {
	w.seenMu.Lock()
	w.blind, w.seen.all = true, true
	w.seenMu.Unlock()
}

// forget drops the watches on path and every directory below it. Only a watched directory
// has watched directories below it: addTree adds parents first and skips what it cannot add.
func (w *watcher) forget(path string) {
	if !w.watched[path] {
		return
	}
	for p := range w.watched {
		if within(path, p) {
			delete(w.watched, p)
			if err := w.fs.Remove(p); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
				w.log.Debug("local: remove watch", "path", relSlash(w.root, p), "err", err)
			}
		}
	}
}
