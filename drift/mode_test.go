package drift

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestModeFlag: --drift holds a Mode: report by default, correct when asked, and a misspelt
// value is refused with an error naming the flag, the value and the valid modes.
func TestModeFlag(t *testing.T) {
	cases := map[string]struct {
		args    []string
		want    Mode
		wantErr string
	}{
		"default":  {nil, ModeReport, ""},
		"report":   {[]string{"--drift=report"}, ModeReport, ""},
		"correct":  {[]string{"--drift=correct"}, ModeCorrect, ""},
		"misspelt": {[]string{"--drift=corect"}, "", `invalid argument "corect" for "--drift" flag: unknown drift mode "corect" (want report or correct)`},
		"empty":    {[]string{"--drift="}, "", `unknown drift mode ""`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			m := ModeReport
			fs.Var(&m, "drift", "drift mode")
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || m != tc.want {
				t.Fatalf("mode %q, %v; want %q", m, err, tc.want)
			}
		})
	}
}

// TestModeFlagHelp: --help shows --drift as the string flag it was, with its default.
func TestModeFlagHelp(t *testing.T) {
	fs := pflag.NewFlagSet("help", pflag.ContinueOnError)
	m := ModeReport
	fs.Var(&m, "drift", "drift mode")
	if usage := fs.FlagUsages(); !strings.Contains(usage, `--drift string`) || !strings.Contains(usage, `(default "report")`) {
		t.Fatalf("--help shows %q, want a string flag with its default", usage)
	}
}
