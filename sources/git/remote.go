package git

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// remoteURL is a repository URL split into what go-git is given, what people are shown and
// the credentials that were embedded in it.
type remoteURL struct {
	fetch   string // handed to go-git: no password, no userinfo for http(s)
	display string // for URL(), logs and errors: no credentials
	proto   string // https, http, ssh, git, file
	user    string // ssh user ("git" when the URL names none)
	host    string // ssh host, for known_hosts
	port    int    // ssh port, for known_hosts
	urlUser string // http(s) userinfo, used as basic auth when no Auth files are set
	urlPass string
}

// parseRemoteURL parses raw and strips its credentials. Errors never quote raw, which may
// hold a password.
func parseRemoteURL(raw string) (remoteURL, error) {
	if raw == "" {
		return remoteURL{}, errors.New("git: a repository URL is required")
	}
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return remoteURL{}, errors.New("git: invalid repository URL (not shown: it may hold credentials)")
	}
	r := remoteURL{proto: strings.ToLower(ep.Protocol)}
	switch r.proto {
	case "http", "https":
		u, err := url.Parse(raw)
		if err != nil {
			return remoteURL{}, errors.New("git: invalid repository URL (not shown: it may hold credentials)")
		}
		if u.User != nil {
			r.urlUser = u.User.Username()
			r.urlPass, _ = u.User.Password()
			u.User = nil
		}
		r.fetch, r.display = u.String(), u.String()
	case "ssh":
		r.user, r.host, r.port = ep.User, ep.Host, ep.Port
		if r.user == "" {
			r.user = "git"
		}
		if r.port == 0 {
			r.port = 22
		}
		ep.Password = "" // an SSH password in a URL is never used
		r.fetch, r.display = ep.String(), ep.String()
	default:
		ep.User, ep.Password = "", ""
		r.fetch, r.display = ep.String(), ep.String()
	}
	return r, nil
}

// fetchErr wraps err as a failure to fetch from the remote.
func (s *Source) fetchErr(err error) error {
	return fmt.Errorf("git: fetch %s: %w", s.remote.display, err)
}

// noAnswerError is an exchange with the remote cut by Options.Timeout.
type noAnswerError struct{ timeout time.Duration }

// Error says how long the remote was given.
func (e *noAnswerError) Error() string { return fmt.Sprintf("no answer within %s", e.timeout) }

// Unwrap makes it a context.DeadlineExceeded.
func (e *noAnswerError) Unwrap() error { return context.DeadlineExceeded }

// exchange runs call, one exchange with the remote (an ls-remote, a fetch, a push), within
// Options.Timeout: one that the deadline cuts fails with "no answer within 1m0s", whatever
// go-git made of it (the caller's own deadline or cancellation is returned as it is).
func (s *Source) exchange(ctx context.Context, call func(context.Context) error) error {
	cause := &noAnswerError{timeout: s.opts.Timeout}
	ctx, cancel := context.WithTimeoutCause(ctx, s.opts.Timeout, cause)
	defer cancel()
	err := call(ctx)
	if err != nil && context.Cause(ctx) == error(cause) {
		return cause
	}
	return err
}

// listRemote runs an ls-remote: the remote's references, HEAD included when the server
// says where it points.
func (s *Source) listRemote(ctx context.Context) ([]*plumbing.Reference, error) {
	auth, err := s.opts.Auth.method(s.remote)
	if err != nil {
		return nil, err
	}
	rem := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{
		Name: "origin",
		URLs: []string{s.remote.fetch},
	})
	var refs []*plumbing.Reference
	err = s.exchange(ctx, func(ctx context.Context) (err error) {
		refs, err = rem.ListContext(ctx, &gogit.ListOptions{Auth: auth})
		return err
	})
	return refs, err
}

// resolveTarget returns the ref to follow, asking the remote where HEAD points the first
// time when Options.Ref is empty.
func (s *Source) resolveTarget(ctx context.Context, refs []*plumbing.Reference) (target, error) {
	s.mu.Lock()
	tgt := s.target
	s.mu.Unlock()
	if tgt.remote != "" || !tgt.pin.IsZero() {
		return tgt, nil
	}
	if refs == nil {
		var err error
		if refs, err = s.listRemote(ctx); err != nil {
			return target{}, err
		}
	}
	tgt = branchTarget(remoteHEAD(refs))
	s.mu.Lock()
	s.target = tgt
	s.mu.Unlock()
	s.log.Debug("resolved remote HEAD", "ref", tgt.remote)
	return tgt, nil
}

// remoteHEAD returns the branch the remote's HEAD points to, or "main" when the server did
// not advertise it.
func remoteHEAD(refs []*plumbing.Reference) plumbing.ReferenceName {
	for _, ref := range refs {
		if ref.Name() == plumbing.HEAD && ref.Type() == plumbing.SymbolicReference &&
			ref.Target().IsBranch() {
			return ref.Target()
		}
	}
	return plumbing.NewBranchReferenceName("main")
}

// findRef returns the hash of name in refs.
func findRef(refs []*plumbing.Reference, name plumbing.ReferenceName) (plumbing.Hash, bool) {
	for _, ref := range refs {
		if ref.Name() == name && ref.Type() == plumbing.HashReference {
			return ref.Hash(), true
		}
	}
	return plumbing.ZeroHash, false
}
