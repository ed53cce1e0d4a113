package forge

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
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

// scpLike matches the scp form of an SSH remote: [user@]host:path, the path not starting
// with a slash twice (which would be a URL).
var scpLike = regexp.MustCompile(`^(?:[^@/:]+@)?([A-Za-z0-9.\-]+):([^/].*)$`)

// hostKinds are the forges guessed from a host.
var hostKinds = map[string]Kind{"github.com": GitHub, "gitlab.com": GitLab, "bitbucket.org": Bitbucket}

// parseRepository reads a Git URL in its https, ssh:// or scp-like (git@host:owner/repo.git)
// form. Errors name the URL without its credentials.
func parseRepository(raw string) (repository, error) {
	if raw == "" {
		return repository{}, errors.New("a Git URL is required to know the repository")
	}
	var host, web, path string
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && strings.Contains(raw, "://") {
		switch strings.ToLower(u.Scheme) {
		case "https", "http":
			web = strings.ToLower(u.Scheme) + "://" + u.Host
		case "ssh", "git+ssh", "ssh+git":
			web = "https://" + u.Hostname()
		default:
			return repository{}, fmt.Errorf("Git URL %s: scheme %q has no forge (want https, ssh:// or git@host:owner/repo)", shown(raw), u.Scheme)
		}
		host, path = u.Hostname(), u.Path
	} else if m := scpLike.FindStringSubmatch(raw); m != nil && !strings.Contains(raw, "://") {
		host, path = m[1], m[2]
		web = "https://" + host
	} else {
		return repository{}, fmt.Errorf("Git URL %s: not an https, ssh:// or git@host:owner/repo URL", shown(raw))
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	path = strings.Trim(path, "/")
	segs := strings.Split(path, "/")
	if host == "" || path == "" || len(segs) < 2 || slicesHasEmpty(segs) {
		return repository{}, fmt.Errorf("Git URL %s: no owner/repository in its path", shown(raw))
	}
	return repository{host: strings.ToLower(host), web: web, path: path,
		owner: strings.Join(segs[:len(segs)-1], "/"), name: segs[len(segs)-1]}, nil
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

// slicesHasEmpty reports whether a path has an empty segment (a//b).
func slicesHasEmpty(segs []string) bool {
	for _, s := range segs {
		if s == "" {
			return true
		}
	}
	return false
}

// shown is raw without credentials, for errors: a URL's userinfo and an scp-like remote's
// user are dropped; what does not parse is not shown at all.
func shown(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && strings.Contains(raw, "://") {
		u.User = nil
		return fmt.Sprintf("%q", u.String())
	}
	if m := scpLike.FindStringSubmatch(raw); m != nil && !strings.Contains(raw, "://") {
		return fmt.Sprintf("%q", m[1]+":"+m[2])
	}
	return "(not shown: it may hold credentials)"
}
