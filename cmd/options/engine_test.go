package options

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// TestEngineFlags: the flags' defaults are the engine's (prune, 25 %, tenants impersonated),
// each flag reaches its option, and a bad --max-prune is an error that names the flag.
func TestEngineFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) Engine {
		t.Helper()
		var o Engine
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o
	}
	def := parse(t)
	opts, err := def.ReconcilerOptions()
	if err != nil {
		t.Fatal(err)
	}
	if !opts.Prune || opts.MaxPrune != 0.25 || opts.Force || opts.AllowEmpty || !opts.ImpersonateTenants || opts.Namespace != keys.SystemNamespace {
		t.Errorf("defaults: %+v", opts)
	}
	set := parse(t, "--prune=false", "--max-prune", "0.5", "--force-conflicts", "--allow-empty", "--impersonate-tenants=false")
	set.Namespace = "other-system"
	opts, err = set.ReconcilerOptions()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Prune || opts.MaxPrune != 0.5 || !opts.Force || !opts.AllowEmpty || opts.ImpersonateTenants || opts.Namespace != "other-system" {
		t.Errorf("set: %+v", opts)
	}
	for share, want := range map[string]float64{"100%": 1, "0%": 0, "12.5%": 0.125, "1": 1} {
		if opts, err := (&Engine{MaxPrune: share}).ReconcilerOptions(); err != nil || opts.MaxPrune != want {
			t.Errorf("--max-prune %s: %v, %v (want %v)", share, opts.MaxPrune, err, want)
		}
	}
	for _, bad := range []string{"lots", "150%", "-1", "1.5"} {
		if _, err := (&Engine{MaxPrune: bad}).ReconcilerOptions(); err == nil || !strings.HasPrefix(err.Error(), "--max-prune: ") {
			t.Errorf("--max-prune %s: %v", bad, err)
		}
	}
}
