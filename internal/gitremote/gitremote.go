package gitremote

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Remote is what a Git URL says about where its repository lives.
type Remote struct {
	// Host is the host name, without userinfo or port, in lower case.
	Host string
	// Web is the web address of the host and any path before the repository's:
	// https://host[:port] for an http(s) URL (its scheme kept), https://host for ssh.
	Web string
	// Path is the repository's path, without slashes around it or a .git suffix:
	// owner/repo, group/subgroup/project, or prefix/owner/repo.
	Path string
}

// Segments are the path's parts.
func (r Remote) Segments() []string { return strings.Split(r.Path, "/") }

// scpLike matches the scp form of an SSH remote: [user@]host:path, the path not starting
// with a slash twice (which would be a URL).
var scpLike = regexp.MustCompile(`^(?:[^@/:]+@)?([A-Za-z0-9.\-]+):([^/].*)$`)

// Parse reads a Git URL in its https, ssh:// or scp-like form; a path of at least two
// segments (owner/repo) is required. Errors name the URL without its credentials.
func Parse(raw string) (Remote, error) {
	if raw == "" {
		return Remote{}, errors.New("a Git URL is required to know the repository")
	}
	var host, web, path string
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && strings.Contains(raw, "://") {
		switch strings.ToLower(u.Scheme) {
		case "https", "http":
			web = strings.ToLower(u.Scheme) + "://" + u.Host
		case "ssh", "git+ssh", "ssh+git":
			web = "https://" + u.Hostname()
		default:
			return Remote{}, fmt.Errorf("Git URL %s: scheme %q has no forge (want https, ssh:// or git@host:owner/repo)", Shown(raw), u.Scheme)
		}
		host, path = u.Hostname(), u.Path
	} else if m := scpLike.FindStringSubmatch(raw); m != nil && !strings.Contains(raw, "://") {
		host, path = m[1], m[2]
		web = "https://" + host
	} else {
		return Remote{}, fmt.Errorf("Git URL %s: not an https, ssh:// or git@host:owner/repo URL", Shown(raw))
	}
	path = strings.Trim(strings.TrimSuffix(strings.Trim(path, "/"), ".git"), "/")
	segs := strings.Split(path, "/")
	if host == "" || path == "" || len(segs) < 2 || hasEmpty(segs) {
		return Remote{}, fmt.Errorf("Git URL %s: no owner/repository in its path", Shown(raw))
	}
	return Remote{Host: strings.ToLower(host), Web: web, Path: path}, nil
}

// hasEmpty reports whether a path has an empty segment (a//b).
func hasEmpty(segs []string) bool {
	for _, s := range segs {
		if s == "" {
			return true
		}
	}
	return false
}

// Shown is raw without credentials, quoted, for messages: a URL's userinfo and an scp-like
// remote's user are dropped; what does not parse is not shown at all.
func Shown(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && strings.Contains(raw, "://") {
		u.User = nil
		return fmt.Sprintf("%q", u.String())
	}
	if m := scpLike.FindStringSubmatch(raw); m != nil && !strings.Contains(raw, "://") {
		return fmt.Sprintf("%q", m[1]+":"+m[2])
	}
	return "(not shown: it may hold credentials)"
}
