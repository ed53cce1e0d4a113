package forge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRepository(t *testing.T) {
	type testCase struct {
		url         string
		kind        Kind
		host, path  string
		owner, name string
		web         string
	}
	cases := map[string]testCase{
		"https":                  {url: "https://github.com/acme/jobs", kind: GitHub, host: "github.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://github.com"},
		"https .git":             {url: "https://github.com/acme/jobs.git", kind: GitHub, host: "github.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://github.com"},
		"https trailing slash":   {url: "https://github.com/acme/jobs/", kind: GitHub, host: "github.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://github.com"},
		"https .git and slash":   {url: "https://github.com/acme/jobs.git/", kind: GitHub, host: "github.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://github.com"},
		"https with creds":       {url: "https://x-access-token:s3cret@github.com/acme/jobs.git", kind: GitHub, host: "github.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://github.com"},
		"https with port":        {url: "https://git.example.com:3000/acme/jobs.git", kind: Gitea, host: "git.example.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://git.example.com:3000"},
		"scp-like":               {url: "git@github.com:acme/jobs.git", kind: GitHub, host: "github.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://github.com"},
		"scp-like without user":  {url: "bitbucket.org:team/jobs", kind: Bitbucket, host: "bitbucket.org", path: "team/jobs", owner: "team", name: "jobs", web: "https://bitbucket.org"},
		"ssh://":                 {url: "ssh://git@github.com/acme/jobs.git", kind: GitHub, host: "github.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://github.com"},
		"ssh:// with port":       {url: "ssh://git@gitlab.example.com:2222/acme/jobs.git", kind: GitLab, host: "gitlab.example.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://gitlab.example.com"},
		"gitlab subgroups":       {url: "https://gitlab.com/acme/ml/infra/jobs.git", kind: GitLab, host: "gitlab.com", path: "acme/ml/infra/jobs", owner: "acme/ml/infra", name: "jobs", web: "https://gitlab.com"},
		"gitlab subgroups scp":   {url: "git@gitlab.com:acme/ml/jobs.git", kind: GitLab, host: "gitlab.com", path: "acme/ml/jobs", owner: "acme/ml", name: "jobs", web: "https://gitlab.com"},
		"gitea under a sub-path": {url: "https://example.com/git/acme/jobs.git", kind: Gitea, host: "example.com", path: "acme/jobs", owner: "acme", name: "jobs", web: "https://example.com/git"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := parseRepository(tc.url)
			if err == nil {
				r, err = r.forKind(tc.kind, tc.url)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := testCase{url: tc.url, kind: tc.kind, host: r.host, path: r.path, owner: r.owner, name: r.name, web: r.web}
			if got != tc {
				t.Errorf("got %+v\nwant %+v", got, tc)
			}
		})
	}
}

func TestParseRepositoryRefuses(t *testing.T) {
	cases := map[string]struct {
		url, kind, want string
	}{
		"no repository":          {url: "https://tok3n@github.com/acme", kind: "github", want: `"https://github.com/acme": no owner/repository`},
		"empty segment":          {url: "https://github.com/acme//jobs", kind: "github", want: "no owner/repository"},
		"file URL":               {url: "file:///srv/git/jobs", want: `scheme "file" has no forge`},
		"github with subgroups":  {url: "https://user:tok3n@github.com/a/b/c", kind: "github", want: `"https://github.com/a/b/c": github wants owner/repository, the path has 3 parts`},
		"not a URL":              {url: "tok3n jobs", want: "(not shown: it may hold credentials)"},
		"unknown host, no kind":  {url: "https://git.example.com/acme/jobs", want: "the forge of git.example.com is not known from its host"},
		"unknown kind":           {url: "https://github.com/acme/jobs", kind: "sourcehut", want: `unknown forge "sourcehut"`},
		"no URL":                 {url: "", want: "a Git URL is required"},
		"API URL is not a URL":   {url: "https://github.com/acme/jobs", kind: "github", want: "API URL"},
		"bitbucket, three parts": {url: "git@bitbucket.org:a/b/c.git", want: `"bitbucket.org:a/b/c.git": bitbucket wants owner/repository`},
	}
	tokenFile := writeToken(t, "tok3n-value")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := Options{Kind: Kind(tc.kind), TokenFile: tokenFile}
			if name == "API URL is not a URL" {
				o.APIURL = "api.github.com"
			}
			_, err := New(o, tc.url)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "tok3n") {
				t.Errorf("error %q shows the URL's credentials", err)
			}
		})
	}
}

func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	two := filepath.Join(dir, "two")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(two, []byte("secret-one\nsecret-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ file, want string }{
		"none":      {"", "a token file is required"},
		"missing":   {filepath.Join(dir, "missing"), "no such file"},
		"empty":     {empty, "is empty"},
		"two lines": {two, "holds white space or control characters"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(Options{TokenFile: tc.file}, "https://github.com/acme/jobs")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
	r, err := New(Options{TokenFile: writeToken(t, "  tok\n")}, "https://github.com/acme/jobs")
	if err != nil {
		t.Fatal(err)
	}
	if r.token != "tok" {
		t.Errorf("token %q, want the file's content without white space", r.token)
	}
}

// writeToken writes token to a file and returns its path.
func writeToken(t *testing.T, token string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
