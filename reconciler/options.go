package reconciler

import (
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// Options configure a Manager.
type Options struct {
	// FieldManager is the server-side apply field manager (default gpuctl).
	FieldManager string
	// Namespace holds the inventory's parent object (default keys.SystemNamespace).
	Namespace string
	// InventoryName names the inventory's parent ConfigMap (default gpuctl-inventory).
	InventoryName string
	// Force takes ownership of fields that another field manager owns; without it such
	// conflicts are reported with that manager's name and not applied.
	Force bool
	// Prune deletes inventory members that are no longer desired.
	Prune bool
	// MaxPrune is the largest share of the inventory one sync may delete (0.25: 25 %); 1 allows all.
	MaxPrune float64
	// AllowEmpty lets a sync apply an empty desired state (which prunes everything).
	AllowEmpty bool
	// WholePrunes keeps the whole live object of each member to prune as its change's Live,
	// for a diff that shows what a prune takes away (gpuctl diff). Without it a plan keeps of
	// each member that no desired object names its kind and metadata alone (no
	// managedFields), which is all a prune reads, and counts its GPUs while listing: a sync
	// that prunes 10,000 Jobs then holds ~1 KB of each, not a whole Job with its
	// managedFields (issue 32: 325 MiB at the daemon's peak).
	WholePrunes bool
	// Concurrency bounds the requests in flight within one stage.
	Concurrency int
	// RecreateTimeout bounds the wait for a deleted object to go before it is created again.
	RecreateTimeout time.Duration
	// ImpersonateTenants writes (dry-runs, applies, recreates and prunes) each tenant object —
	// one carrying the annotation keys.Tenant — as the ServiceAccount keys.TenantServiceAccount
	// of its tenant's namespace, so that the API server holds it to the tenant ClusterRole;
	// reads stay with the manager's own identity. On in DefaultOptions.
	ImpersonateTenants bool
	// Scope limits what a plan may take away to the part of the repository it was given: the
	// directories (or files) below the repository root, slash-separated and relative to it, as
	// in the annotation keys.Source ("teams/alice/"). Only inventory members declared there are
	// prune candidates, and only nodes of pools declared there lose labels; every desired
	// object is still planned. Empty: the whole repository.
	Scope []string
	// LimitedCredentials lets a plan run with credentials that may not read everything, such as
	// a team member's bound to edit in one namespace: when the inventory cannot be read, the plan
	// is made without it (no prunes; Apply prunes nothing and does not record the inventory),
	// an object or the nodes these credentials may not read are left unchecked with a note
	// (Plan.Notes) instead of failing, and tenant objects are checked and written with these
	// credentials rather than as the tenant. Off for the daemon: its own identity must read all.
	LimitedCredentials bool
}

// DefaultOptions returns the options of `gpuctl sync`: prune on, 25 % prune budget, no force,
// tenants impersonated.
func DefaultOptions() Options {
	return Options{
		FieldManager:       keys.FieldManager,
		Namespace:          keys.SystemNamespace,
		InventoryName:      keys.InventoryName,
		Prune:              true,
		MaxPrune:           0.25,
		Concurrency:        64,
		RecreateTimeout:    2 * time.Minute,
		ImpersonateTenants: true,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.FieldManager == "" {
		o.FieldManager = d.FieldManager
	}
	if o.Namespace == "" {
		o.Namespace = d.Namespace
	}
	if o.InventoryName == "" {
		o.InventoryName = d.InventoryName
	}
	if o.Concurrency <= 0 {
		o.Concurrency = d.Concurrency
	}
	if o.RecreateTimeout <= 0 {
		o.RecreateTimeout = d.RecreateTimeout
	}
	o.Scope = normalizeScope(o.Scope)
	return o
}
