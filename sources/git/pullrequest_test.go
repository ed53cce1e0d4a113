package git

import "testing"

func TestPullRequestURL(t *testing.T) {
	cases := map[string]string{
		"https://github.com/acme/gitops.git":                "https://github.com/acme/gitops/compare/main...add-sft?expand=1",
		"https://ci:s3cret@github.com/acme/gitops":          "https://github.com/acme/gitops/compare/main...add-sft?expand=1",
		"git@github.com:acme/gitops.git":                    "https://github.com/acme/gitops/compare/main...add-sft?expand=1",
		"ssh://git@github.example.com:2222/acme/gitops.git": "https://github.example.com/acme/gitops/compare/main...add-sft?expand=1",
		"https://gitlab.com/ml/platform/gitops.git":         "https://gitlab.com/ml/platform/gitops/-/merge_requests/new?merge_request%5Bsource_branch%5D=add-sft&merge_request%5Btarget_branch%5D=main",
		"git@gitlab.example.com:ml/gitops.git":              "https://gitlab.example.com/ml/gitops/-/merge_requests/new?merge_request%5Bsource_branch%5D=add-sft&merge_request%5Btarget_branch%5D=main",
		"https://git.example.com/ml/gitops.git":             "",
		"/srv/git/gitops.git":                               "",
	}
	for remote, want := range cases {
		if got := PullRequestURL(remote, "add-sft", "main"); got != want {
			t.Errorf("%s:\n got %s\nwant %s", remote, got, want)
		}
	}
}
