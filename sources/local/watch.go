package local

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
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
	fs      *fsnotify.Watcher
	root    string // symlink-free
	log     *slog.Logger
	changes chan struct{}
	deb     debouncer
	watched map[string]bool // directories added to fs
	done    chan struct{}   // closed by close
	stopped chan struct{}   // closed when run returns
}

// startWatcher watches the tree at root and starts the goroutine that signals changes.
func startWatcher(root string, quiet time.Duration, changes chan struct{}, log *slog.Logger) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{
		fs:      fw,
		root:    root,
		log:     log,
		changes: changes,
		deb:     debouncer{quiet: quiet, max: max(MaxWait, quiet)},
		watched: map[string]bool{},
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if err := w.addTree(root); err != nil {
		fw.Close()
		return nil, err
	}
	go w.run()
	return w, nil
}

// close stops the goroutine and releases the watches.
func (w *watcher) close() error {
	close(w.done)
	err := w.fs.Close()
	<-w.stopped
	return err
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
		if err := w.addTree(w.root); err != nil {
			w.log.Warn("local: cannot watch root", "err", err)
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
			return filepath.SkipDir
		}
		w.watched[p] = true
		return nil
	})
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
