package app

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// openSource parses the command line args and opens (then closes) the source they set.
func openSource(t *testing.T, args string) (Options, error) {
	t.Helper()
	var o Options
	cmd := &cobra.Command{}
	o.BindFlags(cmd)
	if err := cmd.Flags().Parse(strings.Fields(args)); err != nil {
		t.Fatal(err)
	}
	src, err := o.Source.Open(nil)
	if err == nil {
		src.Close()
	}
	return o, err
}

// TestGitTimeoutFlag: --git-timeout (default 1m) must be positive: a Git source that could wait
// for ever on a server that never answers is refused at start.
func TestGitTimeoutFlag(t *testing.T) {
	for args, want := range map[string]string{
		"--source=git:https://example.com/x.git --git-timeout=0":          "--git-timeout 0s: must be positive",
		"--source=git:https://example.com/x.git --git-timeout=-1s":        "--git-timeout -1s: must be positive",
		"--source=git:https://u:secret@example.com/x.git --git-timeout=0": "--git-timeout 0s",
		"--source=git:https://example.com/x.git --git-timeout=30s":        "",
		"--source=git:https://example.com/x.git":                          "",
		"--source=dir:. --git-timeout=0":                                  "",
	} {
		o, err := openSource(t, args)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", args, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret")):
			t.Errorf("%s: %v, want %q", args, err, want)
		case !strings.Contains(args, "--git-timeout") && o.Source.Timeout != time.Minute:
			t.Errorf("%s: --git-timeout defaults to %s, want 1m", args, o.Source.Timeout)
		}
	}
}
