package git

import (
	"encoding/json"
	"slices"
	"strings"
)

// What the forges send: the headers that carry an event's name and a body's signature, the
// events that are pushes, and where a push body names its refs.

// eventHeaders lists, per route, the headers that name the event, in the order read.
var eventHeaders = map[WebhookKind][]string{
	WebhookGitHub: {"X-GitHub-Event"},
	WebhookGitLab: {"X-Gitlab-Event"},
	// Gitea sends X-Gitea-Event, X-Gogs-Event and X-GitHub-Event, all with the same value.
	WebhookGeneric: {"X-GitHub-Event", "X-Gitea-Event", "X-Gogs-Event", "X-Gitlab-Event", "X-Event-Key"},
}

// pushEvents are the event names that announce a push: GitHub, Gitea and Gogs "push",
// GitLab "Push Hook" and "Tag Push Hook", Bitbucket Cloud "repo:push".
var pushEvents = map[string]bool{"push": true, "Push Hook": true, "Tag Push Hook": true, "repo:push": true}

// signature is one header that carries the hex HMAC-SHA256 of the body.
type signature struct {
	header string
	prefix string // "sha256=" before the hex
	// optional: the prefix may be left out (senders that sign without it).
	optional bool
}

// signatures lists, per HMAC route, the signature headers in the order checked; the first
// one present decides, so a wrong signature is never rescued by another header.
var signatures = map[WebhookKind][]signature{
	WebhookGitHub: {{header: "X-Hub-Signature-256", prefix: "sha256="}},
	WebhookGeneric: {
		{header: "X-Signature-256", prefix: "sha256=", optional: true},
		{header: "X-Hub-Signature-256", prefix: "sha256=", optional: true}, // GitHub, Gitea
		{header: "X-Gitea-Signature"},                                      // Gitea, Forgejo
		{header: "X-Gogs-Signature"},                                       // Gogs
		{header: "X-Hub-Signature", prefix: "sha256="},                     // Bitbucket (GitHub's is SHA-1: refused)
	},
}

// valid reports whether the header value v signs body under secret.
func (s signature) valid(v string, body []byte, secret string) bool {
	hexSig, ok := strings.CutPrefix(v, s.prefix)
	if !ok && !s.optional {
		return false
	}
	return validHMAC(body, secret, hexSig)
}

// pushBody is what a push body says about its refs: "ref" (GitHub, GitLab, Gitea, Gogs) or
// Bitbucket Cloud's push.changes[].new and .old (old alone when a ref is deleted).
type pushBody struct {
	Ref  string `json:"ref"`
	Push struct {
		Changes []struct {
			New *bitbucketRef `json:"new"`
			Old *bitbucketRef `json:"old"`
		} `json:"changes"`
	} `json:"push"`
}

// bitbucketRef is a branch or tag in a Bitbucket Cloud push.
type bitbucketRef struct {
	Type string `json:"type"` // branch, tag (named_branch and bookmark are Mercurial's)
	Name string `json:"name"`
}

// fullName is the ref's full name (refs/heads/main), or "" for a kind Git does not have.
func (r *bitbucketRef) fullName() string {
	switch {
	case r == nil || r.Name == "":
		return ""
	case r.Type == "branch":
		return "refs/heads/" + r.Name
	case r.Type == "tag":
		return "refs/tags/" + r.Name
	}
	return ""
}

// payloadRefs returns the full names of the refs a push body names, or nil when the body
// names none (or is not JSON).
func payloadRefs(body []byte) []string {
	var p pushBody
	if json.Unmarshal(body, &p) != nil {
		return nil
	}
	var refs []string
	if p.Ref != "" {
		refs = append(refs, p.Ref)
	}
	for _, c := range p.Push.Changes {
		for _, r := range []*bitbucketRef{c.New, c.Old} {
			if n := r.fullName(); n != "" && !slices.Contains(refs, n) {
				refs = append(refs, n)
			}
		}
	}
	return refs
}
