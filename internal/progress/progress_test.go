package progress_test

import (
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/progress"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestThrottle(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	th := progress.NewThrottle(time.Second, c.now)
	due := 0
	// 10 s of work, a step every 10 ms: the first report after 1 s, then one a second.
	for range 1000 {
		c.t = c.t.Add(10 * time.Millisecond)
		if th.Due() {
			due++
		}
	}
	if due != 10 {
		t.Errorf("reports in 10 s at one a second: %d, want 10", due)
	}
	short := progress.NewThrottle(time.Second, c.now)
	c.t = c.t.Add(999 * time.Millisecond)
	if short.Due() || short.Reported() {
		t.Error("work shorter than the interval reported")
	}
}
