package options

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
)

// Engine are the flags of commands that plan or apply.
type Engine struct {
	// Namespace holds the inventory (default keys.SystemNamespace); the daemon sets its --namespace.
	Namespace  string
	Force      bool
	Prune      bool
	MaxPrune   string
	AllowEmpty bool
	// ImpersonateTenants writes each tenant's objects as its ServiceAccount gpuctl-tenant.
	ImpersonateTenants bool
	// Scope is the part of the repository a PATH below its root names (reconciler.Options.Scope);
	// set by diff and sync --local, not a flag.
	Scope []string
	// LimitedCredentials plans with what the credentials may read (reconciler.Options.LimitedCredentials);
	// set by diff and sync --local, never by the daemon.
	LimitedCredentials bool
	// WholePrunes keeps the whole live object of each member to prune
	// (reconciler.Options.WholePrunes); set by diff, which shows it, not a flag.
	WholePrunes bool
}

// BindFlags adds the engine's flags.
func (o *Engine) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Force, "force-conflicts", false, "take over fields that another field manager owns")
	fs.BoolVar(&o.Prune, "prune", true, "delete objects that gpuctl applied and that are no longer rendered")
	fs.StringVar(&o.MaxPrune, "max-prune", "25%", "refuse a sync that would prune more than this share of the inventory")
	fs.BoolVar(&o.AllowEmpty, "allow-empty", false, "allow a sync of an empty render (which prunes everything)")
	fs.BoolVar(&o.ImpersonateTenants, "impersonate-tenants", true,
		"write the objects of each tenant directory as the namespace's ServiceAccount "+keys.TenantServiceAccount+" (off: as gpuctl's own identity)")
}

// ReconcilerOptions are the engine's options that the flags set; an error names the flag.
func (o *Engine) ReconcilerOptions() (reconciler.Options, error) {
	opts := reconciler.DefaultOptions()
	opts.Force, opts.Prune, opts.AllowEmpty, opts.ImpersonateTenants = o.Force, o.Prune, o.AllowEmpty, o.ImpersonateTenants
	opts.Scope, opts.LimitedCredentials, opts.WholePrunes = o.Scope, o.LimitedCredentials, o.WholePrunes
	if o.Namespace != "" {
		opts.Namespace = o.Namespace
	}
	share, err := parseShare(o.MaxPrune)
	if err != nil {
		return reconciler.Options{}, fmt.Errorf("--max-prune: %w", err)
	}
	opts.MaxPrune = share
	return opts, nil
}

// Manager builds the engine for a cluster.
func (o *Engine) Manager(cfg *rest.Config) (*reconciler.Manager, error) {
	opts, err := o.ReconcilerOptions()
	if err != nil {
		return nil, err
	}
	return reconciler.NewManager(cfg, opts)
}

// parseShare reads 25%, 100% or 0.25.
func parseShare(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a share such as 25%% or 0.25", s)
	}
	if pct {
		f /= 100
	}
	if f < 0 || f > 1 {
		return 0, fmt.Errorf("%q is not between 0%% and 100%%", s)
	}
	return f, nil
}
