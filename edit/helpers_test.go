package edit_test

import (
	"testing"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/render"
)

// teamConfig maps teams/<team>/ to namespace <team>, and alice@example.com to alice.
const teamConfig = "namespaces:\n  - path: teams/*/**\n    namespace: $1\nteams:\n  alice@example.com: alice\n"

// memRepo opens a repository in memory at /repo holding files.
func memRepo(t *testing.T, files map[string]string) *edit.Repo {
	t.Helper()
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	r, err := edit.Open(fs, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// oneChange returns a function that returns the only change of a result: oneChange(t)(r.Pause(ref)).
func oneChange(t *testing.T) func(*edit.Result, error) edit.Change {
	t.Helper()
	return func(res *edit.Result, err error) edit.Change {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Changes) != 1 {
			t.Fatalf("want 1 change, got %d", len(res.Changes))
		}
		return res.Changes[0]
	}
}
