package app

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/internal/progress"
	"github.com/gpuctl/gpuctl/reconciler"
)

// progressEvery is how often diff and sync report their progress.
const progressEvery = time.Second

// progressWriter reports the progress of a plan and an apply on stderr, at most once a
// second, and nothing for work shorter than that: on a terminal one line rewritten in place,
// else a line each time. A failed apply is reported at once.
type progressWriter struct {
	w        io.Writer
	tty      bool
	throttle *progress.Throttle

	mu   sync.Mutex
	open bool // a line is written on the terminal without its newline
}

func newProgressWriter(w io.Writer, tty bool, now func() time.Time) *progressWriter {
	return &progressWriter{w: w, tty: tty, throttle: progress.NewThrottle(progressEvery, now)}
}

// plan reports a step of Plan.
func (p *progressWriter) plan(phase reconciler.Phase, done, total int) {
	if p.throttle.Due() {
		p.write(fmt.Sprintf("%s [%d/%d]", phase, done, total), false)
	}
}

// apply reports a step of Apply: failures at once, the last step when any was reported.
func (p *progressWriter) apply(done, total int, r reconciler.Result) {
	status := "ok"
	if r.Error != "" {
		status = "failed"
	}
	line := fmt.Sprintf("%s [%d/%d] %s %s: %s", reconciler.PhaseApply, done, total, r.Action, r.Object, status)
	switch {
	case r.Error != "":
		p.write(line, true)
	case p.throttle.Due(), done == total && p.throttle.Reported():
		p.write(line, done == total)
	}
}

// write writes a line; on a terminal it rewrites the open line, and ends it when final.
func (p *progressWriter) write(line string, final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.open = !final
	if final {
		fmt.Fprintln(p.w)
	}
}

// end clears an open line on a terminal, before the output that follows the work.
func (p *progressWriter) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.open = false
	}
}
