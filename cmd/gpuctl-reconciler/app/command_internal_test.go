package app

import (
	"runtime/debug"
	"testing"

	"github.com/spf13/cobra"
)

// TestMemoryLimit: auto is 80 % of the container's limit, or 400Mi without one; a size is
// taken as it is; 0 disables; a bad value names the flag.
func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		flag      string
		container int64
		want      int64
	}{{"auto", 512 << 20, 512 << 20 / 5 * 4}, {"auto", 0, 400 << 20}, {"300Mi", 512 << 20, 300 << 20}, {"0", 512 << 20, 0}} {
		if got, err := memoryLimit(c.flag, c.container); err != nil || got != c.want {
			t.Errorf("memoryLimit(%q, %d) = %d, %v; want %d", c.flag, c.container, got, err, c.want)
		}
	}
	if _, err := memoryLimit("lots", 0); err == nil || err.Error()[:15] != "--memory-limit " {
		t.Errorf("a bad value: %v", err)
	}
}

// TestGCPercent: the daemon collects at GOGC 35 unless GOGC is set, which wins.
func TestGCPercent(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	t.Setenv("GOGC", "")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: the collector's percentage is %d, want %d", got, gcPercent)
	}
	t.Setenv("GOGC", "100")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: the collector's percentage is %d, want 100 (the environment wins)", got)
	}
}

// TestClusterSelectsTheRender: the daemon's --cluster, which names it in its notifications,
// also selects what it renders: the shared files and clusters/<cluster>/.
func TestClusterSelectsTheRender(t *testing.T) {
	var o Options
	cmd := &cobra.Command{}
	o.BindFlags(cmd)
	if err := cmd.Flags().Parse([]string{"--cluster", "a"}); err != nil {
		t.Fatal(err)
	}
	opts, err := o.renderOptions()
	if err != nil || opts.Cluster != "a" {
		t.Fatalf("render options %+v, %v; want cluster a", opts, err)
	}
}
