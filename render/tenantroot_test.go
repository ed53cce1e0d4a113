package render_test

import (
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

// TestTenantRoot: the root is the part of the directory that the first matching rule matched
// before its **, and the namespace is NamespaceFor's.
func TestTenantRoot(t *testing.T) {
	cfg := &render.Config{Namespaces: []render.NamespaceRule{
		{Path: "teams/*/**", Namespace: "$1"},
		{Path: "shared/**", Namespace: "shared"},
		{Path: "ml/*", Namespace: "ml-$1"},
	}}
	cases := map[string]struct {
		root, ns string
		ok       bool
	}{
		"teams/alice/x/y": {"teams/alice", "alice", true},
		"teams/alice":     {"teams/alice", "alice", true},
		"shared/a/b":      {"shared", "shared", true},
		"ml/vision/sub":   {"ml/vision", "ml-vision", true},
		"platform":        {"", "", false},
		"teams":           {"", "", false},
	}
	for dir, want := range cases {
		root, ns, ok := cfg.TenantRoot(dir)
		if root != want.root || ns != want.ns || ok != want.ok {
			t.Errorf("TenantRoot(%q) = %q, %q, %v; want %q, %q, %v", dir, root, ns, ok, want.root, want.ns, want.ok)
		}
		if wantNS, wantOK := cfg.NamespaceFor(dir); wantNS != ns || wantOK != ok {
			t.Errorf("TenantRoot(%q) disagrees with NamespaceFor: %q, %v", dir, wantNS, wantOK)
		}
	}
}
