package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/internal/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// Result is what happened to one object in a sync.
type Result struct {
	Object object.Ref `json:"object"`
	Action Action     `json:"action"`
	Reason string     `json:"reason,omitempty"`
	// Error is why the action failed; empty on success.
	Error string `json:"error,omitempty"`
	// TakenBack are the fields that the apply took back from other managers (Change.TakeBack),
	// set once the apply succeeded.
	TakenBack []Conflict    `json:"takenBack,omitempty"`
	Duration  time.Duration `json:"duration"`
}

// ChangeSet is the outcome of applying a plan, one Result a change, in plan order.
type ChangeSet struct {
	Results  []Result      `json:"results"`
	Duration time.Duration `json:"duration"`
}

// Failed returns the results that have an error.
func (cs *ChangeSet) Failed() []Result {
	var out []Result
	for _, r := range cs.Results {
		if r.Error != "" {
			out = append(out, r)
		}
	}
	return out
}

// WriteFailed reports whether a write of the sync failed, as opposed to changes that failed
// at plan time (skipped with an error, nothing written).
func (cs *ChangeSet) WriteFailed() bool {
	for _, r := range cs.Results {
		if r.Error != "" && r.Action != ActionSkipped {
			return true
		}
	}
	return false
}

// Progress is told about each change once it is done; it may be nil.
type Progress func(done, total int, r Result)

// Apply carries out a plan: it records the inventory, applies creates, updates and recreates
// stage by stage (Namespaces, PriorityClasses, quotas, configuration, Services, workloads,
// node labels, then tenant objects) with bounded concurrency, then prunes in reverse order.
// A failed apply (a conflict, any per-object error) does not stop the prune of other objects;
// only the failure of a Namespace or of a tenant's identity keeps what depends on it from
// being pruned (see pruneBlocks). Changes that failed at plan time are results with their
// error, and do not stop the others. Then Kueue's Workloads of paused Jobs are deactivated
// (syncPausedWorkloads). A refused plan is not applied.
func (m *Manager) Apply(ctx context.Context, plan *Plan, progress Progress) (*ChangeSet, error) {
	if plan.Refused != nil {
		return nil, plan.Refused
	}
	start := time.Now()
	results := make([]Result, len(plan.Changes))
	index := map[*Change]int{}
	for i, c := range plan.Changes {
		index[c] = i
		results[i] = Result{Object: c.Object, Action: c.Action, Reason: c.Reason, Error: c.Error}
	}
	var mu sync.Mutex
	done, total := 0, countWrites(plan)
	record := func(c *Change, d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		r := &results[index[c]]
		r.Duration = d
		if err != nil {
			r.Error = err.Error()
		} else {
			r.TakenBack = c.TakeBack
		}
		done++
		if progress != nil {
			progress(done, total, *r)
		}
	}
	// A plan made without the inventory (limited credentials) does not record it: these
	// credentials may not, and the plan has no prunes.
	gks, nss := m.members(plan, true)
	if !plan.limited {
		if err := m.writeInventory(ctx, plan.inventory, gks, nss); err != nil {
			return nil, fmt.Errorf("record inventory: %w", err)
		}
	}
	blocks := pruneBlocks(m.runStages(ctx, plan, false, record))
	for i, c := range plan.Changes {
		if why := blocks(c); why != "" && c.Action == ActionDelete {
			c.Action, c.Reason = ActionSkipped, why // a member still: the inventory keeps its kind
			results[i].Action, results[i].Reason = c.Action, c.Reason
		}
	}
	if len(m.runStages(ctx, plan, true, record)) == 0 && !plan.limited {
		gks, nss = m.members(plan, false)
		if err := m.writeInventory(ctx, plan.inventory, gks, nss); err != nil {
			return nil, fmt.Errorf("record inventory: %w", err)
		}
	}
	cs := &ChangeSet{Results: results, Duration: time.Since(start)}
	var errs []error
	for _, r := range cs.Failed() {
		errs = append(errs, fmt.Errorf("%s: %s: %s", r.Object, r.Action, r.Error))
	}
	if err := m.syncPausedWorkloads(ctx, plan); err != nil {
		errs = append(errs, fmt.Errorf("paused jobs: %w", err))
	}
	return cs, errors.Join(errs...)
}

func countWrites(p *Plan) int {
	n := 0
	for _, c := range p.Changes {
		if attempted(c) {
			n++
		}
	}
	return n
}

// attempted reports whether Apply tries a change: a write, or a conflict that it reports as
// failed (a conflict left as drift is skipped, see Plan.LeaveDrift).
func attempted(c *Change) bool {
	return c.Writes() || (len(c.Conflicts) > 0 && c.Error == "" && c.Action != ActionSkipped)
}

// pruneBlocks returns, for the applies that failed, why a delete may not run: a prune in a
// Namespace whose apply failed, or of a tenant object (pruned as the tenant) whose tenant's
// identity failed, waits for a sync where they succeed. Other prunes go ahead: a conflict or a
// failure of one object never stops the prune of unrelated objects.
func pruneBlocks(failed []*Change) func(*Change) string {
	ns, identity := map[string]string{}, map[string]string{}
	for _, c := range failed {
		switch {
		case c.Object.Group() == "" && c.Object.Kind == "Namespace":
			ns[c.Object.Name] = c.Object.String()
		case isTenantIdentity(c):
			identity[c.Object.Namespace] = c.Object.String()
		}
	}
	return func(c *Change) string {
		if what, ok := ns[c.Object.Namespace]; ok && c.namespaced {
			return "not pruned: the apply of " + what + " failed in this sync"
		}
		if what, ok := identity[c.tenant]; ok {
			return "not pruned: the apply of the tenant's identity " + what + " failed in this sync"
		}
		return ""
	}
}

// members returns the group-kinds and namespaces of the inventory: with pending, those of
// everything desired or still to prune; without, those of what is left after the prune. A
// scoped plan keeps every group-kind and namespace the inventory had: it did not see the
// members declared outside its scope.
func (m *Manager) members(plan *Plan, pending bool) (map[schema.GroupKind]bool, map[string]bool) {
	gks, nss := map[schema.GroupKind]bool{}, map[string]bool{}
	for gk := range plan.unlisted { // members not seen are still members
		gks[gk] = true
	}
	if len(plan.Scope) > 0 {
		for gk := range plan.inventory.groupKinds {
			gks[gk] = true
		}
		for ns := range plan.inventory.namespaces {
			nss[ns] = true
		}
	}
	for _, c := range plan.Changes {
		if c.resource == nodeGVR || (!pending && c.Action == ActionDelete) {
			continue
		}
		gks[c.Object.GroupKind()] = true
		if c.Object.Namespace != "" && c.Object.Namespace != m.opts.Namespace {
			nss[c.Object.Namespace] = true
		}
	}
	return gks, nss
}

// runStages applies (deletes=false, stages in order) or prunes (deletes=true, in reverse
// order) and returns the changes that failed.
func (m *Manager) runStages(ctx context.Context, plan *Plan, deletes bool, record func(*Change, time.Duration, error)) []*Change {
	stages := map[int][]*Change{}
	for _, c := range plan.Changes {
		isDelete := c.Action == ActionDelete
		if attempted(c) && isDelete == deletes {
			stages[c.stage] = append(stages[c.stage], c)
		}
	}
	order := make([]int, 0, len(stages))
	for s := range stages {
		order = append(order, s)
	}
	sort.Ints(order)
	if deletes {
		sort.Sort(sort.Reverse(sort.IntSlice(order)))
	}
	var failed []*Change
	var mu sync.Mutex
	for _, s := range order {
		_ = parallel(ctx, m.opts.Concurrency, stages[s], func(ctx context.Context, c *Change) error {
			begin := time.Now()
			err := m.applyOne(ctx, c)
			if err != nil {
				mu.Lock()
				failed = append(failed, c)
				mu.Unlock()
			}
			record(c, time.Since(begin), err)
			return nil // one failure does not stop the others
		})
	}
	return failed
}

// applyOne carries out one change, as the identity that writes its object.
func (m *Manager) applyOne(ctx context.Context, c *Change) error {
	defer c.whole()() // a deferred object's body, for the write alone
	// Pool labels are intents on nodes gpuctl never creates, not adoption: they follow Force.
	force := c.force || (c.resource == nodeGVR && m.opts.Force)
	if len(c.Conflicts) > 0 && !force {
		return conflictError(c.Conflicts, m.opts.Force)
	}
	switch {
	case c.keep:
		return m.keep(ctx, c)
	case c.Action == ActionDelete:
		return m.delete(ctx, c)
	case c.Action == ActionRecreate:
		if err := m.delete(ctx, c); err != nil {
			return err
		}
		if err := m.waitGone(ctx, c); err != nil {
			return err
		}
	}
	live := c.Live // what the update was decided on; creates and recreates apply desired as it is
	if c.Action != ActionUpdate {
		live = nil
	}
	err := m.write(ctx, c, func(ri dynamic.ResourceInterface) error {
		return m.applyOver(ctx, ri, c.Desired, live, force)
	})
	if apierrors.IsConflict(err) {
		return conflictError(conflictsOf(err), m.opts.Force)
	}
	return err
}

// conflictError reports fields that other managers own; forcing tells that Force was asked
// for, and refused because gpuctl did not create the object.
func conflictError(cs []Conflict, forcing bool) error {
	msg := "conflict:"
	for i, c := range cs {
		if i > 0 {
			msg += ";"
		}
		msg += fmt.Sprintf(" %s is owned by %q", c.Field, c.Manager)
	}
	if forcing {
		return errors.New(msg + " (gpuctl forces fields only on objects it created)")
	}
	return errors.New(msg + " (use --force-conflicts to take it over)")
}

func (m *Manager) delete(ctx context.Context, c *Change) error {
	bg := metav1.DeletePropagationBackground
	err := m.write(ctx, c, func(ri dynamic.ResourceInterface) error {
		return ri.Delete(ctx, c.Object.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitGone waits until a deleted object is gone, so that it can be created again.
func (m *Manager) waitGone(ctx context.Context, c *Change) error {
	ctx, cancel := context.WithTimeout(ctx, m.opts.RecreateTimeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := m.resource(c).Get(ctx, c.Object.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
