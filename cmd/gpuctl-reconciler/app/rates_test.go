package app

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
)

// TestRateFlags: the daemon's own clients get --kube-api-qps and --kube-api-burst (default 50
// and 100, not client-go's 5 and 10) on a copy of the configuration, which the engine keeps
// as it was; rates that would stop the daemon or the API are refused.
func TestRateFlags(t *testing.T) {
	parse := func(args ...string) RateOptions {
		t.Helper()
		var o RateOptions
		cmd := &cobra.Command{}
		o.BindFlags(cmd.Flags())
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := parse()
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: "https://example.com"}
	if own := o.clientConfig(cfg); own.QPS != 50 || own.Burst != 100 || cfg.QPS != 0 || cfg.Burst != 0 {
		t.Errorf("defaults: the daemon's clients %v/%d, the engine's %v/%d; want 50/100 and 0/0", own.QPS, own.Burst, cfg.QPS, cfg.Burst)
	}
	if o.APIQPS != 20 || o.APIBurst != 100 {
		t.Errorf("API rate %v/%d, want 20/100", o.APIQPS, o.APIBurst)
	}
	set := parse("--kube-api-qps=7.5", "--kube-api-burst=9")
	if own := set.clientConfig(cfg); own.QPS != 7.5 || own.Burst != 9 {
		t.Errorf("--kube-api-qps=7.5 --kube-api-burst=9: %v/%d", own.QPS, own.Burst)
	}
	if off := parse("--api-qps=-1"); off.validate() != nil {
		t.Errorf("--api-qps=-1 (no limit): %v", off.validate())
	}
	for args, want := range map[string]string{
		"--kube-api-qps=0":   "--kube-api-qps must be positive",
		"--kube-api-burst=0": "--kube-api-burst at least 1",
		"--api-qps=0":        "--api-qps 0 would refuse every request",
		"--api-burst=0":      "--api-burst must be at least 1",
	} {
		o := parse(args)
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
