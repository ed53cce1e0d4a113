package gitremote

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := map[string]Remote{
		"https://x-access-token:s3cret@github.com/acme/jobs.git/": {Host: "github.com", Web: "https://github.com", Path: "acme/jobs"},
		"http://git.example.com:3000/acme/jobs":                   {Host: "git.example.com", Web: "http://git.example.com:3000", Path: "acme/jobs"},
		"git@GitHub.com:acme/jobs.git":                            {Host: "github.com", Web: "https://GitHub.com", Path: "acme/jobs"},
		"ssh://git@gitlab.example.com:2222/ml/infra/jobs.git":     {Host: "gitlab.example.com", Web: "https://gitlab.example.com", Path: "ml/infra/jobs"},
	}
	for raw, want := range cases {
		got, err := Parse(raw)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "/srv/git/jobs.git", "file:///srv/git/jobs", "https://tok3n@github.com/acme", "https://github.com/acme//jobs", "tok3n jobs"} {
		if _, err := Parse(raw); err == nil || strings.Contains(err.Error(), "tok3n") {
			t.Errorf("%q: %v; want an error without the credentials", raw, err)
		}
	}
}
