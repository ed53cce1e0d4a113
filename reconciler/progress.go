package reconciler

import (
	"context"
	"sync"
)

// Phase names a step of a sync that reports its progress.
type Phase string

// The phases of a sync, in order: Plan lists the inventory, looks up the desired objects
// that are not members (deciding), and dry-runs the changed ones; Apply applies and prunes.
const (
	PhaseList   Phase = "listing"
	PhaseDecide Phase = "deciding"
	PhaseDryRun Phase = "dry-runs"
	PhaseApply  Phase = "applying"
)

// PlanProgress is told how far Plan is in a phase: done of total objects. Listing counts the
// live members listed so far, of at least the desired objects (the total grows when the list
// holds more: members to prune). It is called from several goroutines, one call at a time.
type PlanProgress func(phase Phase, done, total int)

type planProgressKey struct{}

// WithPlanProgress returns a context whose Plan reports its progress to p.
func WithPlanProgress(ctx context.Context, p PlanProgress) context.Context {
	return context.WithValue(ctx, planProgressKey{}, p)
}

// planProgress is the progress of ctx's Plan; never nil.
func planProgress(ctx context.Context) PlanProgress {
	if p, ok := ctx.Value(planProgressKey{}).(PlanProgress); ok && p != nil {
		return p
	}
	return func(Phase, int, int) {}
}

// stepper returns a function that counts n more objects done of total in a phase and reports
// it to ctx's PlanProgress; it is safe for concurrent use.
func stepper(ctx context.Context, phase Phase, total int) func(n int) {
	progress := planProgress(ctx)
	var mu sync.Mutex
	done := 0
	return func(n int) {
		mu.Lock()
		defer mu.Unlock()
		done += n
		progress(phase, done, total)
	}
}
