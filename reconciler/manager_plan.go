package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/internal/cores"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Plan pairs the desired objects with the live ones and decides an action for each, plus the
// deletes of inventory members that are no longer desired. It writes nothing to the cluster;
// it takes ownership of the desired objects (it labels and annotates them in place). Objects whose
// applied-hash and values match the live object are decided locally; the others are decided
// by a server-side dry-run apply.
func (m *Manager) Plan(ctx context.Context, desired []*unstructured.Unstructured) (plan *Plan, err error) {
	return m.PlanDeferred(ctx, desired, nil)
}

// PlanDeferred is Plan of objects that a deferred render handed out (render.Options.Deferred):
// those that bodies holds are heads, whose body the plan materializes where it reads it (to
// hash the object, compare it with a live object that changed, dry-run and apply it) and
// drops again; an edit's sync of 10,000 workloads then decodes the bodies of the few that
// changed (issue #18, bar 6). Their metadata is written as Plan writes it; Apply and the drift
// detector materialize them again when they need their bodies.
func (m *Manager) PlanDeferred(ctx context.Context, desired []*unstructured.Unstructured, bodies *render.Bodies) (plan *Plan, err error) {
	return m.plan(ctx, desired, bodies, nil, false)
}

// PlanRender is PlanDeferred of a render's objects and bodies (nil unless deferred), with
// what the render says of the cluster. Its tenant namespaces held (render.Options.Hold: their
// files have errors, and res holds none of their objects) stay as the last good revision left
// them: neither changed nor pruned (each is a skipped change that says so), and the inventory
// keeps them; objects that the admin's files declare there are planned as always. Only in a
// MultiKueue worker (res.MultiKueueWorker) is a member with MultiKueue's labels
// (keys.MultiKueueCopy) left alone as the manager's copy; elsewhere the labels are a claim
// anyone with kubectl can make, and such a member is pruned as any other.
func (m *Manager) PlanRender(ctx context.Context, res *render.Result) (*Plan, error) {
	return m.plan(ctx, res.Objects, res.Bodies, render.HeldNamespaces(res.Held), res.MultiKueueWorker)
}

// plan is PlanRender of desired, bodies, the namespaces held and whether the cluster is a
// MultiKueue worker.
func (m *Manager) plan(ctx context.Context, desired []*unstructured.Unstructured, bodies *render.Bodies, held []string, worker bool) (plan *Plan, err error) {
	requests, began := m.requests.Load(), time.Now()
	defer func() {
		if plan != nil {
			plan.Stats.Requests, plan.Stats.Took = m.requests.Load()-requests, time.Since(began)
		}
	}()
	plan, err = m.newPlan(ctx)
	if err != nil {
		return nil, err
	}
	plan.Held, plan.multiKueueWorker = held, worker
	inv := plan.inventory
	var nodes, objects []*unstructured.Unstructured
	for _, d := range desired {
		if object.IsNode(d) {
			nodes = append(nodes, d)
		} else {
			objects = append(objects, d)
		}
	}
	refs := takeSecretRefs(objects) // render's, never applied: off before anything is hashed
	// Each object is prepared on its own (hashing it is most of the work): on every core.
	changes := make([]*Change, len(objects))
	errs := make([]error, len(objects))
	memo := m.memoOf(bodies)
	cores.Each(len(objects), func(i int) { changes[i], errs[i] = m.prepare(objects[i], inv.id, memo) })
	m.keepPrepared(bodies, changes, inv.id)
	for i, c := range changes {
		if errs[i] != nil {
			return nil, errs[i]
		}
		c.limited = plan.limited
	}
	refuseSecondDeclarations(changes)
	m.checkSecretRefs(ctx, plan, changes, refs)
	plan.desiredN = len(changes)
	live, err := m.listInventory(ctx, plan, changes)
	if err != nil {
		return nil, err
	}
	members := inventorySize(live, changes)
	if err := m.decide(ctx, changes, live); err != nil {
		return nil, err
	}
	leaveSealed(changes)
	m.keepDeclaredElsewhere(changes)
	prunes := m.prunes(plan, live, changes)
	// A new slice: sorting it must not reorder changes (they would share a backing array).
	plan.Changes = append(append(make([]*Change, 0, len(changes)+len(prunes)), changes...), prunes...)
	nodeChanges, err := m.planNodesLimited(ctx, plan, nodes, changes, live)
	if err != nil {
		return nil, err
	}
	plan.Changes = append(plan.Changes, nodeChanges...)
	m.noteLimits(plan)
	sortChanges(plan.Changes)
	plan.GPUs = gpuDeltas(plan.Changes)
	plan.Refused = m.safety(plan, members)
	return plan, nil
}

// inventorySize is the number of members the inventory lists hold: those kept in live, and
// those found up to date while listing (marked liveSeen on their desired change).
func inventorySize(live map[string]*unstructured.Unstructured, changes []*Change) int {
	n := len(live)
	for _, c := range changes {
		if c.liveSeen {
			n++
		}
	}
	return n
}

// prepare resolves a desired object's resource and marks it as a member of the inventory. It
// changes the object in place: Plan owns the objects it is given. A kind the cluster does not
// serve and a tenant object outside its namespace make a failed change; only a failure of
// discovery itself is an error.
func (m *Manager) prepare(u *unstructured.Unstructured, inventoryID string, memo *prepareMemo) (*Change, error) {
	c := &Change{Object: object.RefOf(u), Desired: u, Source: object.AnnotationOf(u, keys.Source), tenant: tenantOf(u), bodies: memo.bodies}
	var known preparedBody
	var hit bool
	if body, deferred := memo.bodies.Key(u); deferred {
		known, hit = memo.last[preparedKey{body, inventoryID}]
	}
	rm, err := m.mapping(u.GroupVersionKind())
	if meta.IsNoMatchError(err) {
		memo.bodies.Materialize(u) // kept whole: not prepared, Digest hashes it as it is
		c.fail("%v", err)
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", object.RefOf(u).String(), err)
	}
	namespaced := rm.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case namespaced && u.GetNamespace() == "":
		u.SetNamespace(keys.DefaultNamespace) // as kubectl apply does
	case !namespaced:
		u.SetNamespace("")
	}
	c.Object, c.resource, c.namespaced, c.stage = object.RefOf(u), rm.Resource, namespaced, render.KindOrder(object.KindOf(u))
	c.key = c.Object.Key()
	if hit && known.key == c.key { // the same content as the last plan prepared
		c.hash, c.gpus = markMember(u, inventoryID, known.hash), known.gpus
	} else {
		release := memo.bodies.Whole(u) // hashed and counted whole, then a head again
		c.hash, c.gpus = markMember(u, inventoryID, ""), object.GPUs(u)
		release()
	}
	if c.gpus > 0 {
		c.pool = poolOf(u)
	}
	if c.tenant != "" {
		c.stage += tenantStageOffset
	}
	if msg := checkTenantScope(u, namespaced); msg != "" {
		c.fail("%s", msg)
	}
	c.sealed = object.AnnotationOf(u, keys.Encrypted) == keys.EncryptedSealed
	return c, nil
}

// sealedReason is why a change of an object rendered without its SOPS key is skipped.
const sealedReason = "encrypted with SOPS and not decrypted here (no key): left as it is in the cluster"

// leaveSealed skips the changes of objects rendered from encrypted files without their key:
// their values are unknown here, so they are neither compared nor applied, and, desired, not
// pruned either.
func leaveSealed(changes []*Change) {
	for _, c := range changes {
		if c.sealed && c.Error == "" {
			c.Action, c.Reason = ActionSkipped, sealedReason
			c.Conflicts, c.TakeBack, c.Diff, c.Predicted = nil, nil, nil, nil
		}
	}
}

// markMember labels a desired object as a member of the inventory and annotates it with the
// hash of what is applied: hash when known (prepareMemo), else computed. The object's metadata
// maps are changed in place (GetLabels and SetLabels would copy them: a plan prepares every
// desired object).
func markMember(u *unstructured.Unstructured, inventoryID, hash string) string {
	object.SetLabel(u, keys.ApplySetPartOf, inventoryID)
	object.SetLabel(u, keys.ManagedBy, keys.ManagedByValue)
	if hash == "" {
		object.DropAppliedHash(u)
		hash = hashOf(u)
	}
	object.SetAnnotation(u, keys.AppliedHash, hash)
	return hash
}

// preparedKey names a deferred object's content (render.BodyKey) marked for an inventory.
type preparedKey struct {
	body      render.BodyKey
	inventory string
}

// preparedBody is what prepare read of a deferred object's body: its applied-hash and GPUs
// (and its key, which the content determines: checked again).
type preparedBody struct {
	key, hash string
	gpus      int64
}

// prepareMemo is what a plan of a deferred render knows before it prepares: the bodies, and
// what the last such plan prepared of each object's content. A sync of a revision whose files
// barely changed then decodes and hashes the bodies of the objects that changed alone.
type prepareMemo struct {
	bodies *render.Bodies
	last   map[preparedKey]preparedBody // read-only while the plan prepares
}

// memoOf returns the memo of a plan of bodies (none without).
func (m *Manager) memoOf(bodies *render.Bodies) *prepareMemo {
	memo := &prepareMemo{bodies: bodies}
	if last := m.prepared.Load(); bodies != nil && last != nil {
		memo.last = *last
	}
	return memo
}

// keepPrepared remembers what a plan prepared of its deferred objects, for the next plan:
// those alone, so that the memo holds no more than the newest revision's objects.
func (m *Manager) keepPrepared(bodies *render.Bodies, changes []*Change, inventoryID string) {
	if bodies == nil {
		return
	}
	next := make(map[preparedKey]preparedBody, bodies.Len())
	for _, c := range changes {
		if c == nil || c.hash == "" {
			continue
		}
		if body, deferred := bodies.Key(c.Desired); deferred {
			next[preparedKey{body, inventoryID}] = preparedBody{key: c.key, hash: c.hash, gpus: c.gpus}
		}
	}
	m.prepared.Store(&next)
}

// listInventory lists the members of the inventory, one list per group-kind across all
// namespaces, keyed by object.Ref.Key. Members that are up to date with their desired object
// are marked unchanged and left out of the map; members that no desired object names are kept
// as their metadata, their GPUs in plan.liveGPUs (unless Options.WholePrunes). A group-kind
// that may not be listed across all namespaces is recorded in plan.unlisted (its members are
// not pruned); its desired objects are looked up in their namespaces like objects outside the
// inventory (lookup), where a read refused again fails (or, with limited credentials, leaves
// unchecked) that object alone. Any other error fails the plan.
func (m *Manager) listInventory(ctx context.Context, plan *Plan, changes []*Change) (map[string]*unstructured.Unstructured, error) {
	inv, stats := plan.inventory, &plan.Stats
	desired := make(map[string]*Change, len(changes))
	for _, c := range changes {
		if c.Error == "" {
			desired[c.objectKey()] = c
		}
	}
	m.verified.keepOnly(desired)
	gks := map[schema.GroupKind]bool{}
	for gk := range inv.groupKinds {
		gks[gk] = true
	}
	for _, c := range changes {
		gks[c.Object.GroupKind()] = true
	}
	var mu sync.Mutex
	live := map[string]*unstructured.Unstructured{}
	unlisted := map[schema.GroupKind]bool{}
	plan.liveGPUs = map[string]int64{}
	progress, listed := planProgress(ctx), 0
	list := make([]schema.GroupKind, 0, len(gks))
	for gk := range gks {
		list = append(list, gk)
	}
	w := m.watchedView()
	err := parallel(ctx, m.opts.Concurrency, list, func(ctx context.Context, gk schema.GroupKind) error {
		rm, err := m.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			return nil // a kind the cluster no longer serves has no members left
		}
		if err != nil {
			return err
		}
		if w != nil {
			keep := func(u *unstructured.Unstructured) {
				key := object.RefOf(u).Key()
				if m.seenUpToDate(desired[key], u, nil) {
					return
				}
				gpus, counted := int64(0), desired[key] == nil && !m.opts.WholePrunes
				if counted { // to prune: its metadata alone (Options.WholePrunes)
					gpus, u = object.GPUs(u), metadataOnly(u)
				} else {
					trimLive(u)
				}
				mu.Lock()
				live[key] = u
				if counted {
					plan.liveGPUs[key] = gpus
				}
				mu.Unlock()
			}
			n, err := m.listWatched(ctx, w, inv, gk, rm, desired, keep)
			if err != nil {
				return err
			}
			if n >= 0 {
				mu.Lock()
				stats.Watched += n
				mu.Unlock()
				return nil
			}
		}
		// Pages of 500, built-in kinds as protobuf without managedFields (listPage), each
		// trimmed of status at once (trimLive): the plan needs neither, and they are most of
		// an object's size.
		// The next page is asked for while this one is decided.
		opts := metav1.ListOptions{LabelSelector: keys.ApplySetPartOf + "=" + inv.id, Limit: 500}
		pending := m.fetchPage(ctx, rm, opts)
		for pending != nil {
			r := <-pending
			p, err := r.page, r.err
			if readRefused(err) {
				mu.Lock()
				unlisted[gk] = true
				mu.Unlock()
				return nil
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", gk, err)
			}
			pending = nil
			if opts.Continue = p.next; opts.Continue != "" {
				pending = m.fetchPage(ctx, rm, opts)
			}
			// An up-to-date member is decided here and not kept: a no-op sync of a large
			// inventory then holds one copy of each object, not two. A member that no
			// desired object names is kept as its metadata (pruneCandidate). Each item is
			// its own desired change's: they are decided on every core.
			keyOf := make([]string, len(p.items)) // the key of each member kept
			kept := make([]*unstructured.Unstructured, len(p.items))
			gpus := make([]int64, len(p.items))
			errs := make([]error, len(p.items))
			cores.Each(len(p.items), func(i int) {
				key := p.key(i)
				c := desired[key]
				if c != nil && m.upToDateInPage(c, p, i) {
					return
				}
				var u *unstructured.Unstructured
				var err error
				if c == nil {
					u, gpus[i], err = p.pruneCandidate(i, m.opts.WholePrunes)
				} else {
					u, err = p.live(i)
				}
				if err != nil {
					errs[i] = err
					return
				}
				if c != nil || m.opts.WholePrunes {
					trimLive(u)
				}
				keyOf[i], kept[i] = key, u
			})
			if err := errors.Join(errs...); err != nil {
				return err
			}
			mu.Lock()
			for i, key := range keyOf {
				if key == "" {
					continue
				}
				live[key] = kept[i]
				if desired[key] == nil && !m.opts.WholePrunes {
					plan.liveGPUs[key] = gpus[i]
				}
			}
			listed += len(p.items)
			stats.Listed += len(p.items)
			progress(PhaseList, listed, max(listed, len(desired)))
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	plan.unlisted = unlisted
	for k, u := range live { // an incomplete list prunes nothing
		if unlisted[object.RefOf(u).GroupKind()] {
			delete(live, k)
		}
	}
	for _, c := range changes {
		if c.Error == "" && unlisted[c.Object.GroupKind()] {
			// A member seen on an earlier page is not trusted either: the list is incomplete.
			// The object is looked up in its own namespace instead (lookup).
			c.Action, c.liveSeen = "", false
		}
	}
	return live, nil
}

// seenUpToDate decides a listed member that is up to date with its desired change c (nil: not
// desired) as unchanged, and says so; the member is then not kept. typed, when not nil, is the
// member as decoded, u then its metadata alone (see upToDateAs).
func (m *Manager) seenUpToDate(c *Change, u *unstructured.Unstructured, typed runtime.Object) bool {
	if c == nil || object.AnnotationOf(u, keys.AppliedHash) != c.appliedHash() {
		return false // another configuration: its values are not read
	}
	release := c.whole()
	defer release()
	if !m.upToDateAs(c.Desired, u, typed) {
		return false
	}
	c.Action, c.liveSeen = ActionUnchanged, true
	return true
}

// readRefused tells a read that the reconciler is not allowed (or that the resource does not
// support): it fails the objects concerned, not the plan.
func readRefused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err)
}

// decide sets the action of each desired object: create, unchanged (decided locally), or
// what a server-side dry-run says (update, recreate, unchanged, or a conflict). A live object
// that gpuctl did not create fails its change (see adoptionError). Admin objects are dry-run
// first: a tenant's dry-run is made as the tenant, whose identity is an admin object.
func (m *Manager) decide(ctx context.Context, changes []*Change, live map[string]*unstructured.Unstructured) error {
	var unknown, dryRun []*Change
	for _, c := range changes {
		if c.liveSeen || c.Error != "" || c.sealed {
			continue // decided while listing, failed, or left as it is (leaveSealed)
		}
		c.Live = live[c.objectKey()]
		switch {
		case c.Live == nil:
			unknown = append(unknown, c)
		case c.upToDateWith(m):
			c.Action = ActionUnchanged
		case m.decideKept(c):
		default:
			dryRun = append(dryRun, c)
		}
	}
	// Objects not in the inventory may still exist (created by someone else, or by another
	// inventory): one GET each when they are few, else one LIST per kind and namespace.
	found, err := m.lookup(ctx, unknown)
	if err != nil {
		return err
	}
	for _, c := range unknown {
		if c.Error != "" || c.unchecked {
			continue
		}
		if c.Live = found[c.objectKey()]; c.Live == nil {
			c.Action = ActionCreate
		} else if err := m.adoptionError(c.Live, c.Desired); err != nil {
			c.fail("%v", err)
		} else if c.upToDateWith(m) { // a member whose kind could not be listed
			c.Action = ActionUnchanged
		} else if !m.decideKept(c) {
			dryRun = append(dryRun, c)
		}
	}
	var admin, tenant []*Change
	for _, c := range dryRun {
		if m.impersonated(c) {
			tenant = append(tenant, c)
		} else {
			admin = append(admin, c)
		}
	}
	m.skipDependents(changes)
	step := stepper(ctx, PhaseDryRun, len(dryRun))
	if err := parallel(ctx, m.opts.Concurrency, admin, func(ctx context.Context, c *Change) error {
		defer step(1)
		return m.dryRun(ctx, c, false)
	}); err != nil {
		return err
	}
	m.skipDependents(changes)
	pending := pendingIdentities(changes)
	err = parallel(ctx, m.opts.Concurrency, tenant, func(ctx context.Context, c *Change) error {
		defer step(1)
		return m.dryRun(ctx, c, pending[c.tenant])
	})
	m.skipDependents(changes)
	return err
}

// lookupListThreshold is the number of objects of one kind and namespace above which a LIST
// is cheaper than a GET each.
const lookupListThreshold = 8

// lookup finds which of the changes' objects exist, keyed by object.Ref.Key.
func (m *Manager) lookup(ctx context.Context, changes []*Change) (map[string]*unstructured.Unstructured, error) {
	type scope struct {
		resource   schema.GroupVersionResource
		namespace  string
		namespaced bool
	}
	groups := map[scope][]*Change{}
	for _, c := range changes {
		k := scope{c.resource, c.Object.Namespace, c.namespaced}
		groups[k] = append(groups[k], c)
	}
	var mu sync.Mutex
	found := map[string]*unstructured.Unstructured{}
	keep := func(u *unstructured.Unstructured) {
		trimLive(u)
		mu.Lock()
		found[object.RefOf(u).Key()] = u
		mu.Unlock()
	}
	var gets []*Change
	var lists []scope
	for k, cs := range groups {
		if len(cs) > lookupListThreshold {
			lists = append(lists, k)
		} else {
			gets = append(gets, cs...)
		}
	}
	step := stepper(ctx, PhaseDecide, len(changes))
	err := parallel(ctx, m.opts.Concurrency, lists, func(ctx context.Context, k scope) error {
		defer step(len(groups[k]))
		ri := scoped(m.dyn, k.resource, k.namespaced, k.namespace)
		opts := metav1.ListOptions{Limit: 500}
		for {
			l, err := ri.List(ctx, opts)
			if readRefused(err) && opts.Continue == "" {
				if tr := m.tenantReader(groups[k][0]); tr != nil && allTenant(groups[k]) {
					ri = tr
					l, err = ri.List(ctx, opts)
				}
			}
			if readRefused(err) {
				for _, c := range groups[k] { // each change is its own: no lock needed
					c.refusedRead("list", fmt.Sprintf("list %s in %q: %v", k.resource.Resource, k.namespace, err))
				}
				return nil
			}
			if err != nil {
				return fmt.Errorf("list %s in %q: %w", k.resource.Resource, k.namespace, err)
			}
			for i := range l.Items {
				keep(&unstructured.Unstructured{Object: l.Items[i].Object})
			}
			if opts.Continue = l.GetContinue(); opts.Continue == "" {
				return nil
			}
		}
	})
	if err != nil {
		return nil, err
	}
	err = parallel(ctx, m.opts.Concurrency, gets, func(ctx context.Context, c *Change) error {
		defer step(1)
		u, err := m.resource(c).Get(ctx, c.Object.Name, metav1.GetOptions{})
		if tr := m.tenantReader(c); readRefused(err) && !apierrors.IsNotFound(err) && tr != nil {
			u, err = tr.Get(ctx, c.Object.Name, metav1.GetOptions{})
		}
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
			c.refusedRead("get", fmt.Sprintf("get: %v", err))
			return nil
		case err != nil:
			return fmt.Errorf("%s: get: %w", c.Object, err)
		}
		keep(u)
		return nil
	})
	return found, err
}

// dryRun asks the API server what an apply would do to a live object, as the identity that
// will apply it. Its refusal fails the change; so does a tenant's Forbidden, unless the
// tenant's identity is written by this very plan (identityPending): then the change is planned
// from the live object alone and checked when applied.
//
// Fields that another manager owns: when the revision changes the object and it is a member of
// this inventory (or Force is on), Git wins — the change takes them back with force (TakeBack);
// otherwise they are Conflicts, not applied. Either way the diff is that of a forced dry-run
// (nothing is written), so it shows only the fields gpuctl sets, never server defaults.
func (m *Manager) dryRun(ctx context.Context, c *Change, identityPending bool) error {
	if c.Error != "" {
		return nil // a dependency failed meanwhile
	}
	c.force = m.mayForce(c.Live, m.opts.Force) // for the apply; the first dry-run finds the conflicts
	ri, err := m.writer(c)
	if err != nil {
		return err
	}
	res, err := m.dryRunApply(ctx, ri, c, false)
	if apierrors.IsConflict(err) {
		conflicts := conflictsOf(err)
		if m.mayForce(c.Live, m.opts.Force || c.revisionChanges()) {
			c.force, c.TakeBack = true, conflicts
			c.Reason = "takes back fields from other managers: the revision changes this object, and Git wins on the fields it declares"
		} else {
			c.Conflicts = conflicts
			c.Reason = "fields owned by another manager; not applied without --force-conflicts"
			if m.opts.Force {
				c.Reason = "fields owned by another manager; gpuctl forces fields only on objects it created"
			}
		}
		res, err = m.dryRunApply(ctx, ri, c, true)
		if err != nil && len(c.Conflicts) > 0 && ctx.Err() == nil {
			c.Action = ActionUpdate // the conflict stands; only the diff is unknown
			return nil
		}
	}
	body, _ := m.applied(c.Desired, c.Live)
	switch {
	case err == nil:
	case isImmutable(err) && keepable(c.Desired, c.Live): // its file did not change: kept (keep.go)
		c.Action, c.Reason, c.keep = ActionUpdate, fmt.Sprintf(keptReason, strings.TrimPrefix(immutableReason(err), "immutable field changed: ")), true
		return nil
	case isImmutable(err): // recreated: created as desired
		c.Action, c.Reason = ActionRecreate, immutableReason(err)
		c.Diff = object.DiffObjects(c.Live, c.Desired, c.Desired.Object)
		return nil
	case identityPending && apierrors.IsForbidden(err):
		c.Action, c.Reason = ActionUpdate, "planned without a dry-run: the tenant's identity is written by this sync"
		c.Diff = object.DiffObjects(c.Live, body, body.Object)
		return nil
	case c.limited && apierrors.IsForbidden(err):
		c.Action, c.Reason = ActionUpdate, "planned without a dry-run: these credentials may read the object but not write it"
		c.Diff = object.DiffObjects(c.Live, body, body.Object)
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		c.fail("dry-run apply: %v", err)
		return nil
	}
	c.Predicted = res
	c.Diff = object.DiffObjects(c.Live, res, body.Object)
	switch {
	case len(c.Diff) > 0 || len(c.Conflicts) > 0 || len(c.TakeBack) > 0:
		c.Action = ActionUpdate
	case object.AnnotationOf(c.Live, keys.AppliedHash) != object.AnnotationOf(c.Desired, keys.AppliedHash):
		c.Action = ActionUpdate
		c.Reason = "the configuration changed without changing the object; records it"
	default:
		c.Action = ActionUnchanged
	}
	return nil
}

// dryRunApply is a server-side dry-run apply of what gpuctl applies for a change's object
// (applied) with its writer ri.
func (m *Manager) dryRunApply(ctx context.Context, ri dynamic.ResourceInterface, c *Change, force bool) (*unstructured.Unstructured, error) {
	body, _ := m.applied(c.Desired, c.Live)
	return ri.Apply(ctx, c.Object.Name, body, metav1.ApplyOptions{
		FieldManager: m.opts.FieldManager, Force: force, DryRun: []string{metav1.DryRunAll}})
}

// isImmutable tells an apply rejected because it changes an immutable field.
func isImmutable(err error) bool {
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "immutable")
}

func immutableReason(err error) string {
	var se *apierrors.StatusError
	if errors.As(err, &se) && se.ErrStatus.Details != nil {
		var fields []string
		for _, c := range se.ErrStatus.Details.Causes {
			if strings.Contains(c.Message, "immutable") {
				fields = append(fields, c.Field)
			}
		}
		if len(fields) > 0 {
			return "immutable field changed: " + strings.Join(fields, ", ")
		}
	}
	return "immutable field changed"
}

// conflictsOf reads the managers and fields of a server-side apply conflict.
func conflictsOf(err error) []Conflict {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return []Conflict{{Manager: "unknown", Field: err.Error()}}
	}
	var out []Conflict
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		// Message: conflict with "kubectl-edit" using apps/v1: .spec.replicas
		mgr := c.Message
		if i := strings.Index(mgr, `"`); i >= 0 {
			if j := strings.Index(mgr[i+1:], `"`); j >= 0 {
				mgr = mgr[i+1 : i+1+j]
			}
		}
		out = append(out, Conflict{Manager: mgr, Field: c.Field})
	}
	return out
}

// prunes plans the deletes of live members that are not desired and were declared in the
// plan's scope (see inScope). A plan without the inventory prunes nothing: it cannot know
// what gpuctl applied.
func (m *Manager) prunes(plan *Plan, live map[string]*unstructured.Unstructured, changes []*Change) []*Change {
	if plan.limited {
		return nil
	}
	desired := make(map[string]bool, len(changes))
	for _, c := range changes {
		desired[c.objectKey()] = true // failed changes too: they are still desired
	}
	// (up-to-date members are not in live: they were desired)
	var out []*Change
	for k, u := range live {
		if desired[k] || !m.inScope(u.GetAnnotations()[keys.Source]) ||
			plan.multiKueueWorker && keys.MultiKueueCopy(u.GroupVersionKind().Group, u.GetKind(), u.GetLabels()) {
			continue // a MultiKueue copy carries the manager's gpuctl labels: the manager's job
		}
		rm, err := m.mapping(u.GroupVersionKind())
		if err != nil {
			continue
		}
		c := &Change{Object: object.RefOf(u), Action: ActionDelete, Live: u, Source: u.GetAnnotations()[keys.Source],
			resource: rm.Resource, namespaced: rm.Scope.Name() == meta.RESTScopeNameNamespace, stage: render.KindOrder(u.GetKind()),
			tenant: tenantOf(u)}
		if c.tenant != "" { // pruned as the tenant that declared it, before admin objects
			c.stage += tenantStageOffset
		}
		if gpus, ok := plan.liveGPUs[k]; ok { // Live is its metadata: its GPUs were counted while listing
			c.gpus, c.pool, c.liveCounted = gpus, poolOf(u), true
		}
		switch {
		case plan.holds(u):
			c.Action, c.Reason = ActionSkipped, "held: the files of namespace "+u.GetNamespace()+" have errors; kept as the last good revision left it"
		case u.GetLabels()[keys.ManagedBy] != keys.ManagedByValue:
			c.Action, c.Reason = ActionSkipped, "no longer desired, but not labelled "+keys.ManagedBy+"="+keys.ManagedByValue+"; not deleted"
		case u.GetAnnotations()[keys.Prune] == keys.PruneDisabled:
			c.Action, c.Reason = ActionSkipped, "no longer desired; "+keys.Prune+": "+keys.PruneDisabled
		case !m.opts.Prune:
			c.Action, c.Reason = ActionSkipped, "no longer desired; pruning is off"
		}
		out = append(out, c)
	}
	return out
}

// holds reports whether the live member u is a tenant's object of a held namespace.
func (p *Plan) holds(u *unstructured.Unstructured) bool {
	tenant := tenantOf(u)
	return tenant != "" && (slices.Contains(p.Held, tenant) || slices.Contains(p.Held, u.GetNamespace()))
}

// safety refuses an empty desired state and deletes beyond the prune budget.
func (m *Manager) safety(p *Plan, inventorySize int) *SafetyError {
	if p.desiredN == 0 && !m.opts.AllowEmpty {
		return &SafetyError{Reason: fmt.Sprintf("the desired state is empty, which would prune all %d objects of the inventory", inventorySize),
			Override: "--allow-empty"}
	}
	deletes := p.Count(ActionDelete)
	if deletes > 0 && m.opts.MaxPrune < 1 && float64(deletes) > m.opts.MaxPrune*float64(inventorySize) {
		return &SafetyError{Reason: fmt.Sprintf("%d of %d inventory objects would be pruned, more than the %.0f%% budget",
			deletes, inventorySize, m.opts.MaxPrune*100), Override: "--max-prune=100%"}
	}
	return nil
}
