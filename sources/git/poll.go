package git

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/sources"
)

// poll lists the remote ref every Interval ± Jitter and signals Changes when its hash
// differs from the last fetched one. It keeps signalling until a Fetch catches up, so a
// failed Fetch is retried at the next poll.
func (s *Source) poll(ctx context.Context) {
	defer close(s.done)
	timer := time.NewTimer(s.wait())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if s.remoteMoved(ctx) {
			sources.Notify(s.changes)
		}
		timer.Reset(s.wait())
	}
}

// wait returns Interval spread by ± Jitter.
func (s *Source) wait() time.Duration {
	spread := s.opts.Jitter * (2*rand.Float64() - 1)
	return time.Duration(float64(s.opts.Interval) * (1 + spread))
}

// remoteMoved reports whether the remote ref points elsewhere than at the last Fetch. A
// failed ls-remote (one that Options.Timeout cut too, so that a hung server cannot stop the
// poller) is logged.
func (s *Source) remoteMoved(ctx context.Context) bool {
	refs, err := s.listRemote(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("poll failed", "err", s.fetchErr(err))
		}
		return false
	}
	tgt, err := s.resolveTarget(ctx, refs)
	if err != nil {
		return false
	}
	h, ok := findRef(refs, tgt.remote)
	if !ok {
		s.log.Warn("poll: ref not found on the remote", "ref", tgt.remote)
		return false
	}
	s.mu.Lock()
	last := s.lastRef
	s.mu.Unlock()
	if h == last {
		return false
	}
	s.log.Debug("remote ref moved", "ref", tgt.remote, "from", shortHash(last), "to", shortHash(h))
	return true
}

// shortHash abbreviates h for logs; empty for the zero hash.
func shortHash(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return humanize.Revision(h.String())
}
