package reconciler

import (
	"context"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A plan with limited credentials (Options.LimitedCredentials) is what `gpuctl diff` makes for
// a team member whose kubeconfig may edit one namespace: it reads what these credentials may
// read and says plainly, in Plan.Notes, what it could not check. When the inventory cannot be
// read (Forbidden), the plan is made without it: it cannot know what to prune, so it has no
// prunes, and Apply neither prunes nor records the inventory. Within such a plan an object
// these credentials may not read is skipped as "not checked" (no error), the nodes likewise
// (pool labels not checked), and tenant objects are checked and written with these
// credentials, which the API server holds to what they may do, rather than as the tenant
// (a team member may not impersonate). With credentials that read the inventory — the
// reconciler's, an admin's — a refused read stays a per-object error, as in the daemon.

// newPlan starts a plan: it reads the inventory, or, with limited credentials that may not
// read it, starts a plan without it and notes so.
func (m *Manager) newPlan(ctx context.Context) (*Plan, error) {
	plan := &Plan{Scope: m.opts.Scope}
	if len(m.opts.Scope) > 0 {
		plan.Notes = append(plan.Notes, scopeNote(m.opts.Scope))
	}
	inv, err := m.readInventory(ctx)
	switch {
	case err == nil:
	case m.opts.LimitedCredentials && apierrors.IsForbidden(err):
		inv, plan.limited = newInventory(m.opts.InventoryName, m.opts.Namespace), true
		plan.Notes = append(plan.Notes, fmt.Sprintf("the inventory %s/%s is not readable with these credentials: prunes are not shown, and nothing is pruned",
			m.opts.Namespace, m.opts.InventoryName))
	default:
		return nil, fmt.Errorf("read inventory %s/%s: %w", m.opts.Namespace, m.opts.InventoryName, err)
	}
	plan.inventory = inv
	return plan, nil
}

// refusedRead marks a change whose object the credentials may not read (verb: get or list):
// unchecked in a plan without the inventory, else failed with msg.
func (c *Change) refusedRead(verb, msg string) {
	if !c.limited {
		c.fail("%s", msg)
		return
	}
	c.Action, c.Reason, c.unchecked = ActionSkipped, fmt.Sprintf("not checked: these credentials may not %s %s", verb, c.resource.Resource), true
	c.Conflicts, c.Diff, c.Predicted, c.Live, c.liveSeen = nil, nil, nil, nil, false
}

// planNodesLimited plans the pool labels (planNodes), for the nodes and pools in the plan's
// scope. In a plan without the inventory, nodes these credentials may not list leave the
// intents unchecked, with a note.
func (m *Manager) planNodesLimited(ctx context.Context, plan *Plan, intents []*unstructured.Unstructured, changes []*Change,
	live map[string]*unstructured.Unstructured) ([]*Change, error) {
	out, err := m.planNodes(ctx, intents, m.scopedPools(intents, changes, live), &plan.Warnings)
	if err == nil || !plan.limited || !readRefused(err) {
		return out, err
	}
	plan.Notes = append(plan.Notes, "nodes are not readable with these credentials: pool labels are not checked")
	out = nil
	for _, in := range intents {
		out = append(out, &Change{Object: object.RefOf(in), Action: ActionSkipped, Reason: "not checked: these credentials may not list nodes",
			resource: nodeGVR, stage: render.KindOrder("Node"), limited: true, unchecked: true})
	}
	return out, nil
}

// noteLimits adds the notes of a plan without the inventory: the objects left unchecked, and
// the tenant objects checked with these credentials.
func (m *Manager) noteLimits(plan *Plan) {
	if !plan.limited {
		return
	}
	unchecked, tenant := 0, 0
	for _, c := range plan.Changes {
		if c.unchecked && c.resource != nodeGVR {
			unchecked++
		}
		if c.tenant != "" && m.opts.ImpersonateTenants && !c.unchecked {
			tenant++
		}
	}
	if unchecked > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("objects not readable with these credentials, not checked (shown as skipped): %d", unchecked))
	}
	if tenant > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("tenant objects checked with these credentials, not as the namespace's ServiceAccount %s: %d",
			keys.TenantServiceAccount, tenant))
	}
}
