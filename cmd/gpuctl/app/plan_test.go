package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/reconciler"
)

// TestScopeOf: a PATH below the repository root scopes the plan to it (a directory with a
// trailing slash, a file as it is); the root itself and a path outside it do not.
func TestScopeOf(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "teams", "alice"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "teams", "alice", "x.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for path, want := range map[string]string{
		root:                               "",
		".":                                "",
		"teams/alice":                      "teams/alice/",
		filepath.Join(root, "teams/alice"): "teams/alice/",
		"teams/alice/x.yaml":               "teams/alice/x.yaml",
		"teams/../teams/alice/":            "teams/alice/",
		filepath.Dir(root):                 "",
		"..":                               "",
	} {
		if got := strings.Join(scopeOf(root, path), ","); got != want {
			t.Errorf("scopeOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestNotesPrinted: the notes of a plan (scope, what the credentials could not read) are
// printed above the summary.
func TestNotesPrinted(t *testing.T) {
	plan := &reconciler.Plan{Notes: []string{"scoped to teams/alice/: objects declared elsewhere are not pruned"}}
	var out bytes.Buffer
	printSummary(&out, plan, palette{})
	if got, want := out.String(), "note: scoped to teams/alice/: objects declared elsewhere are not pruned\nno changes\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
