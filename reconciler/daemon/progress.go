package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpuctl/gpuctl/internal/progress"
	"github.com/gpuctl/gpuctl/reconciler"
)

// DefaultProgressEvery is how often a long sync logs its progress.
const DefaultProgressEvery = 5 * time.Second

// syncProgress logs the progress of one sync, at most once every Options.ProgressEvery and
// only once the sync has lasted that long: "sync progress" with its phase and done/total.
type syncProgress struct {
	log      *slog.Logger
	throttle *progress.Throttle
}

func (d *Daemon) newSyncProgress() *syncProgress {
	return &syncProgress{log: d.opts.Log, throttle: progress.NewThrottle(d.opts.ProgressEvery, d.opts.Now)}
}

// plan reports a step of the plan (reconciler.PlanProgress).
func (p *syncProgress) plan(phase reconciler.Phase, done, total int) {
	if p.throttle.Due() {
		p.log.Info("sync progress", "phase", phase, "done", done, "total", total)
	}
}

// apply reports a step of the apply (reconciler.Progress).
func (p *syncProgress) apply(done, total int, _ reconciler.Result) {
	p.plan(reconciler.PhaseApply, done, total)
}

// planContext is ctx with the plan's progress reported to p.
func (p *syncProgress) planContext(ctx context.Context) context.Context {
	return reconciler.WithPlanProgress(ctx, p.plan)
}
