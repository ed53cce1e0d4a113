package daemon

import (
	"testing"

	"github.com/gpuctl/gpuctl/sources"
)

// TestSignature: a token's name as a commit's author: what an address cannot hold becomes a
// dash, and nothing can end the name or open another header.
func TestSignature(t *testing.T) {
	d := New(Options{Writes: WriteOptions{Domain: "example.com"}})
	for name, want := range map[string]sources.Signature{
		"alice":                 {Name: "alice", Email: "alice@example.com"},
		"ML Team":               {Name: "ML Team", Email: "ML-Team@example.com"},
		"eve <root@evil>\nX: y": {Name: "eve root@evilX: y", Email: "eve-root-evilX--y@example.com"},
		"  ":                    {Name: "unknown", Email: "unknown@example.com"},
		"..":                    {Name: "..", Email: "unknown@example.com"},
		"ops.bot+ci":            {Name: "ops.bot+ci", Email: "ops.bot+ci@example.com"},
	} {
		if got := d.signature(name); got != want {
			t.Errorf("%q: %+v, want %+v", name, got, want)
		}
	}
	if got := New(Options{}).signature("bob"); got.Email != "bob@gpuctl" {
		t.Errorf("default domain: %+v", got)
	}
}
