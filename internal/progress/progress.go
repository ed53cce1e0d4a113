package progress

import (
	"sync"
	"time"
)

// Throttle lets through at most one report an interval. It is safe for concurrent use.
type Throttle struct {
	every time.Duration
	now   func() time.Time

	mu       sync.Mutex
	next     time.Time
	reported bool
}

// NewThrottle returns a throttle whose first report is due every after now (now() is read
// here: the work starts), and each next one every after the last one let through.
func NewThrottle(every time.Duration, now func() time.Time) *Throttle {
	return &Throttle{every: every, now: now, next: now().Add(every)}
}

// Due reports whether a report may go out now; true also marks it gone out.
func (t *Throttle) Due() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if now.Before(t.next) {
		return false
	}
	t.next, t.reported = now.Add(t.every), true
	return true
}

// Reported reports whether any report has gone out.
func (t *Throttle) Reported() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reported
}
