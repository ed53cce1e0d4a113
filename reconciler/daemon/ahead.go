package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/sources"
)

// A directory source signals a change once its file events pause (the debounce, 100 ms), but
// says when the first event of a burst arrives (sources.Activity). The daemon renders the tree
// then, while the events settle: the render ahead. The sync that follows fetches as ever, and
// uses the render ahead only when it is of the very revision it fetched (a content hash of
// every file), nothing changed in the tree between the two fetches (sources.Activity's Quiet:
// no file event came between them) and the render read nothing else (render.Result.Consistent:
// every file read, by the render or by kustomize, had the content the source hashed); else it
// renders. Nothing
// is applied before the events have settled, and nothing but the fetched revision is applied:
// the render ahead only takes the render's time off an edit's way to the cluster.

// ahead is a render ahead: the revision it fetched, and once done is closed, what it gave.
// cancel stops it: a sync that will not use it renders itself, and two renders of the tree at
// once would double the render's memory and share its cores (at 10,000 files the render of a
// sync whose render ahead read a file between its truncation and its content ran beside it).
type ahead struct {
	rev    sources.Revision
	done   chan struct{}
	res    *render.Result
	err    error
	took   time.Duration
	cancel context.CancelFunc
}

// activity returns the source's Activity channel, or nil when it has none.
func (d *Daemon) activity() <-chan struct{} {
	if a, ok := d.opts.Source.(sources.Activity); ok {
		return a.Activity()
	}
	return nil
}

// renderAhead fetches and renders the source's revision in the background, unless a render
// ahead is running already.
func (d *Daemon) renderAhead(ctx context.Context) {
	if !d.aheadBusy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer d.aheadBusy.Store(false)
		d.tree.RLock()
		defer d.tree.RUnlock()
		rev, err := d.opts.Source.Fetch(ctx)
		if err != nil {
			return
		}
		actx, cancel := context.WithCancel(ctx)
		defer cancel()
		a := &ahead{rev: rev, done: make(chan struct{}), cancel: cancel}
		d.mu.Lock()
		d.ahead = a
		d.mu.Unlock()
		began := time.Now()
		a.res, a.err = d.render(actx, rev)
		a.took = time.Since(began)
		close(a.done)
	}()
}

// takeAhead returns the render ahead of rev, waiting for it to end, and true when the sync
// may use it; the render ahead is forgotten either way, and stopped when it is not used.
func (d *Daemon) takeAhead(ctx context.Context, rev sources.Revision) (*ahead, bool) {
	d.mu.Lock()
	a := d.ahead
	d.ahead = nil
	d.mu.Unlock()
	if a == nil {
		return nil, false
	}
	// Nothing may have changed between the two fetches either: a file removed and put back
	// would leave the revision as it was, and the render ahead without it.
	act, activity := d.opts.Source.(sources.Activity)
	if a.rev.ID != rev.ID || a.rev.Dir != rev.Dir || !activity || !act.Quiet() {
		a.cancel()
		return nil, false
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		a.cancel()
		return nil, false
	}
	var ve *render.ValidationError
	if a.res == nil || !a.res.Consistent || (a.err != nil && !errors.As(a.err, &ve)) {
		return nil, false
	}
	return a, true
}
