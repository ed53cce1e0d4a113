package repopath

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := map[string]struct {
		path string
		want string // a part of the error; "" for none
	}{
		"a file of a team":            {path: "teams/alice/train.yaml"},
		"a name Git takes":            {path: "teams/bob/notes (old).md"},
		"unicode":                     {path: "teams/bob/résumé ✓.yaml"},
		"dots inside a name":          {path: "teams/bob/a..b.yaml"},
		"git~2 is no alias":           {path: "teams/bob/git~2/a.yaml"},
		".GIT":                        {path: "teams/alice/.GIT", want: `".GIT" is .git to Git`},
		".git":                        {path: "teams/alice/.git/x.yaml", want: `".git" is .git to Git`},
		".Git at the top":             {path: ".Git/config", want: `".Git" is .git to Git`},
		"GIT~1":                       {path: "teams/alice/GIT~1", want: `"GIT~1" is .git to Git`},
		"git~1 with a trailing dot":   {path: "teams/alice/git~1./x.yaml", want: "is .git to Git"},
		".git with a trailing dot":    {path: "teams/alice/.git.", want: `".git." is .git to Git`},
		".git with trailing spaces":   {path: "teams/alice/.git  /x.yaml", want: "is .git to Git"},
		"an NTFS stream":              {path: "teams/alice/.git::$INDEX_ALLOCATION/x", want: "is .git to Git"},
		"HFS+ zero-width non-joiner":  {path: "teams/alice/.g\u200cit/x.yaml", want: "is .git to Git"},
		"HFS+ before the dot":         {path: "teams/alice/\u200e.git/x.yaml", want: "is .git to Git"},
		"a dot directory":             {path: "teams/alice/.x/cm.yaml", want: `".x" starts with a dot`},
		"a dot file":                  {path: "teams/alice/.hidden.yaml", want: "starts with a dot"},
		"a dot directory behind HFS+": {path: "teams/alice/\u200c.x/cm.yaml", want: "starts with a dot"},
		".gitmodules":                 {path: ".gitmodules", want: "starts with a dot"},
		"..":                          {path: "teams/../../etc/passwd", want: `".." segment`},
		".":                           {path: "teams/./alice/a.yaml", want: `"." segment`},
		"an empty segment":            {path: "teams//alice/a.yaml", want: "empty segment"},
		"a trailing slash":            {path: "teams/alice/", want: "empty segment"},
		"absolute":                    {path: "/etc/passwd", want: "relative"},
		"a backslash":                 {path: `teams\alice\a.yaml`, want: "backslash"},
		".git behind a backslash":     {path: `teams/alice\.git\x.yaml`, want: "is .git to Git"},
		"a control character":         {path: "teams/alice/a\nb.yaml", want: "control character"},
		"empty":                       {path: "", want: "empty"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := Check(tc.path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check(%q) = %v, want nil", tc.path, err)
			case tc.want != "" && err == nil:
				t.Fatalf("Check(%q) = nil, want an error with %q", tc.path, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Check(%q) = %v, want one with %q", tc.path, err, tc.want)
			}
		})
	}
}

func TestCheckTree(t *testing.T) {
	for _, ok := range []string{"teams/alice/.x/cm.yaml", ".gitignore", ".gpuctl.yaml", "a/.gitmodules", "teams/bob/notes (old).md",
		"CON/file", "a..b", "\u200c.x/a"} {
		if err := CheckTree(ok); err != nil {
			t.Errorf("CheckTree(%q) = %v, want nil: Git checks it out", ok, err)
		}
	}
	for _, bad := range []string{"teams/alice/.GIT/x.yaml", ".git", "a/.git", "git~1/HEAD", "a/.Git ./b", ".g\u200dit/x", ".gi\ufefft",
		"a/../b", "./a", "a\x01b", "a\x7fb", `a\.git\b`, ""} {
		if err := CheckTree(bad); err == nil {
			t.Errorf("CheckTree(%q) = nil, want an error: Git refuses it", bad)
		}
	}
}

func TestIsDotGit(t *testing.T) {
	for seg, want := range map[string]bool{
		".git": true, ".GIT": true, ".gIt": true, "git~1": true, "GIT~1": true, ".git.": true, ".git . .": true, "git~1 ": true,
		".git:": true, ".g\u200cit": true, "\u200e.git": true, ".gi\u200dt\ufeff": true,
		".gitignore": false, ".gitmodules": false, "git": false, "git~2": false, "git~10": false, ".git2": false, ".gxt": false, "": false,
		".g\u200cit.": false, // HFS+ keeps dots: no filesystem reads it as .git (Check refuses it as a dot name)
	} {
		if got := IsDotGit(seg); got != want {
			t.Errorf("IsDotGit(%q) = %v, want %v", seg, got, want)
		}
	}
}
