package git

import (
	"net/url"
	"regexp"
	"strings"
)

// scpRemote matches a remote written as scp does it: git@github.com:owner/repo.git.
var scpRemote = regexp.MustCompile(`^(?:[^@/]+@)?([^:/]+):(.+)$`)

// PullRequestURL is the page that opens a pull request (GitHub) or merge request (GitLab) of
// branch into base, for a remote's URL in its https, ssh:// or scp-like form; "" for another
// host. Credentials in the URL are never part of the page's address.
func PullRequestURL(remote, branch, base string) string {
	host, repo := "", ""
	if u, err := url.Parse(remote); err == nil && u.Scheme != "" && u.Host != "" {
		host, repo = u.Hostname(), u.Path
	} else if m := scpRemote.FindStringSubmatch(remote); m != nil {
		host, repo = m[1], m[2]
	}
	repo = strings.TrimSuffix(strings.Trim(repo, "/"), ".git")
	if host == "" || repo == "" {
		return ""
	}
	page := "https://" + host + "/" + repo
	switch {
	case strings.Contains(host, "github"):
		return page + "/compare/" + url.PathEscape(base) + "..." + url.PathEscape(branch) + "?expand=1"
	case strings.Contains(host, "gitlab"):
		q := url.Values{}
		q.Set("merge_request[source_branch]", branch)
		q.Set("merge_request[target_branch]", base)
		return page + "/-/merge_requests/new?" + q.Encode()
	}
	return ""
}
