package forge

import (
	"fmt"
	"strings"

	"github.com/gpuctl/gpuctl/internal/gitremote"
)

// repository is what a Git URL says about where statuses go.
type repository struct {
	host   string // host name, without userinfo or port
	web    string // the web address of the host and any path prefix: https://host[:port][/prefix]
	prefix string // a path before owner/repo (a Gitea served under a sub-path), "" when none
	path   string // owner/repo; GitLab: group/subgroup/project
	owner  string // the path's first segments (GitLab: the groups)
	name   string // the path's last segment
}

// hostKinds are the forges guessed from a host.
var hostKinds = map[string]Kind{"github.com": GitHub, "gitlab.com": GitLab, "bitbucket.org": Bitbucket}

// parseRepository reads a Git URL (gitremote.Parse) into a repository.
func parseRepository(raw string) (repository, error) {
	r, err := gitremote.Parse(raw)
	if err != nil {
		return repository{}, err
	}
	segs := r.Segments()
	return repository{host: r.Host, web: r.Web, path: r.Path, owner: strings.Join(segs[:len(segs)-1], "/"), name: segs[len(segs)-1]}, nil
}

// forKind checks that the path fits kind: GitLab takes any depth of groups, Gitea a path
// prefix before owner/repo (a sub-path install), GitHub and Bitbucket exactly owner/repo.
func (r repository) forKind(kind Kind, raw string) (repository, error) {
	segs := strings.Split(r.path, "/")
	switch {
	case kind == GitLab || len(segs) == 2:
		return r, nil
	case kind == Gitea:
		r.prefix = strings.Join(segs[:len(segs)-2], "/")
		r.path = strings.Join(segs[len(segs)-2:], "/")
		r.owner = segs[len(segs)-2]
		r.web += "/" + r.prefix
		return r, nil
	}
	return repository{}, fmt.Errorf("Git URL %s: %s wants owner/repository, the path has %d parts", shown(raw), kind, len(segs))
}

// shown is raw without credentials, for errors (gitremote.Shown).
func shown(raw string) string { return gitremote.Shown(raw) }
