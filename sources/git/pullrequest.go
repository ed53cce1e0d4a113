package git

import (
	"net/url"
	"strings"

	"github.com/gpuctl/gpuctl/internal/gitremote"
)

// PullRequestURL is the page that opens a pull request (GitHub) or merge request (GitLab) of
// branch into base, for a remote's URL in its https, ssh:// or scp-like form
// (gitremote.Parse); "" for another host. Credentials in the URL are never part of the
// page's address.
func PullRequestURL(remote, branch, base string) string {
	r, err := gitremote.Parse(remote)
	if err != nil {
		return ""
	}
	page := "https://" + r.Host + "/" + r.Path
	switch {
	case strings.Contains(r.Host, "github"):
		return page + "/compare/" + url.PathEscape(base) + "..." + url.PathEscape(branch) + "?expand=1"
	case strings.Contains(r.Host, "gitlab"):
		q := url.Values{}
		q.Set("merge_request[source_branch]", branch)
		q.Set("merge_request[target_branch]", base)
		return page + "/-/merge_requests/new?" + q.Encode()
	}
	return ""
}
