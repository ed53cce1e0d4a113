package reconciler

import (
	"strings"
	"testing"
)

func TestInScope(t *testing.T) {
	cases := map[string]struct {
		scope []string
		in    []string
		out   []string
	}{
		"unscoped": {nil, []string{"teams/alice/x.yaml", "", ".gpuctl.yaml"}, nil},
		"root":     {[]string{"./"}, []string{"teams/alice/x.yaml", ""}, nil},
		"directory": {[]string{"teams/alice/"}, []string{"teams/alice/x.yaml", "teams/alice/sub/y.yaml"},
			[]string{"teams/alice-2/x.yaml", "teams/bob/x.yaml", ".gpuctl.yaml", "", "quotas/q.yaml"}},
		"unclean": {[]string{"./teams//alice/./"}, []string{"teams/alice/x.yaml"}, []string{"teams/bob/x.yaml"}},
		"file":    {[]string{"teams/alice/x.yaml"}, []string{"teams/alice/x.yaml"}, []string{"teams/alice/x.yaml.bak", "teams/alice/y.yaml"}},
	}
	for name, tc := range cases {
		m := &Manager{opts: Options{Scope: tc.scope}.withDefaults()}
		for _, src := range tc.in {
			if !m.inScope(src) {
				t.Errorf("%s: %q is not in scope %q", name, src, m.opts.Scope)
			}
		}
		for _, src := range tc.out {
			if m.inScope(src) {
				t.Errorf("%s: %q is in scope %q", name, src, m.opts.Scope)
			}
		}
	}
	if got := (Options{Scope: []string{"./teams//alice/./"}}).withDefaults().Scope; strings.Join(got, ",") != "teams/alice/" {
		t.Errorf("normalized scope %q", got)
	}
}
