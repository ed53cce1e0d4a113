package app

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// TestRenderFlagsFollowTheConfigRules: the daemon's render flags are held to the rules of
// .gpuctl.yaml: a mapping to a reserved namespace and an unclean prefix are refused.
func TestRenderFlagsFollowTheConfigRules(t *testing.T) {
	cases := map[string]struct {
		opts RenderOptions
		want string // error substring; "" = valid
	}{
		"team map":            {RenderOptions{NamespaceMap: []string{"teams/*/**=$1"}}, ""},
		"kube-system":         {RenderOptions{NamespaceMap: []string{"teams/*/**=kube-system"}}, "kube-system"},
		"system namespace":    {RenderOptions{NamespaceMap: []string{"ops/**=" + keys.SystemNamespace}}, keys.SystemNamespace},
		"no equals":           {RenderOptions{NamespaceMap: []string{"teams"}}, "PATTERN=NAMESPACE"},
		"root prefix":         {RenderOptions{HostPathPrefixes: []string{"/"}}, "hostPathPrefixes"},
		"writable outside":    {RenderOptions{HostPathPrefixes: []string{"/data"}, WritableHostPathPrefixes: []string{"/etc"}}, "writableHostPathPrefixes"},
		"writable below data": {RenderOptions{HostPathPrefixes: []string{"/data"}, WritableHostPathPrefixes: []string{"/data/scratch"}}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.opts.Options()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			case tc.want == "" && got.Config == nil:
				t.Fatal("no configuration built from the flags")
			}
		})
	}
	got, err := (&RenderOptions{NamespaceMap: []string{"teams/*/**=$1"}, WritableHostPathPrefixes: []string{"/output"}}).Options()
	if err != nil {
		t.Fatal(err)
	}
	if ns, ok := got.Config.NamespaceFor("teams/alice/x"); !ok || ns != "alice" {
		t.Errorf("NamespaceFor(teams/alice/x) = %q, %v", ns, ok)
	}
	if !reflect.DeepEqual(got.Config.WritableHostPathPrefixes, []string{"/output"}) {
		t.Errorf("writable prefixes = %v", got.Config.WritableHostPathPrefixes)
	}
}
