package git

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/gpuctl/gpuctl/sources"
)

// MaxWebhookBody is the largest webhook body accepted; larger ones get 413.
const MaxWebhookBody = 1 << 20

// WebhookKind names the signature scheme of a webhook sender.
type WebhookKind string

// Webhook kinds. Each route triggers a fetch only for a push (see pushEvents) to the ref
// the source follows; other events are acknowledged with 202 "ignored: event X".
const (
	// WebhookGitHub checks X-Hub-Signature-256 (sha256=HMAC-SHA256 of the body), reads the
	// event from X-GitHub-Event and answers the ping event with 200.
	WebhookGitHub WebhookKind = "github"
	// WebhookGitLab checks that X-Gitlab-Token equals the secret and reads the event from
	// X-Gitlab-Event (Push Hook, Tag Push Hook).
	WebhookGitLab WebhookKind = "gitlab"
	// WebhookGeneric checks the first of genericSignatures present: the hex HMAC-SHA256 of
	// the body as GitHub, Gitea, Gogs and Bitbucket send it. It reads the event from the
	// first of their event headers present, and a body without one as a push.
	WebhookGeneric WebhookKind = "generic"
)

// ParseWebhookKind checks a kind given on the command line.
func ParseWebhookKind(s string) (WebhookKind, error) {
	switch k := WebhookKind(strings.ToLower(s)); k {
	case WebhookGitHub, WebhookGitLab, WebhookGeneric:
		return k, nil
	}
	return "", fmt.Errorf("git: unknown webhook kind %q (want github, gitlab or generic)", s)
}

// RefMatcher is implemented by triggers that can tell whether a push to a ref concerns
// them; *Source does. The webhook handler asks it when the payload names a ref.
type RefMatcher interface {
	// MatchesRef reports whether a push to the full ref name (refs/heads/main) matters.
	MatchesRef(ref string) bool
}

// webhook is the http.Handler returned by NewWebhookHandler.
type webhook struct {
	kind       WebhookKind
	secretFile string
	src        sources.Trigger
	log        *slog.Logger
}

// NewWebhookHandler returns a handler that calls src.Trigger for each authentic push
// notification. The secret is read from secretFile at each request (Secret mounts rotate);
// an empty or unreadable secret fails every request with 500, never accepts it.
//
// Responses: 405 for a method other than POST, 413 for a body over MaxWebhookBody, 401 for
// a missing or wrong signature (and no trigger), 200 "pong" for GitHub's ping, 202 "ignored"
// for an event other than a push or for a push to refs that src (when it is a RefMatcher)
// does not follow, 202 "triggered" otherwise. NewWebhookHandler panics on an unknown kind: check flags with
// ParseWebhookKind.
func NewWebhookHandler(kind WebhookKind, secretFile string, src sources.Trigger,
	log *slog.Logger) http.Handler {
	if _, err := ParseWebhookKind(string(kind)); err != nil {
		panic(err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &webhook{kind: kind, secretFile: secretFile, src: src, log: log.With("webhook", kind)}
}

// ServeHTTP implements http.Handler.
func (h *webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	secret, err := readSecret("webhook secret", h.secretFile)
	if err != nil {
		h.log.Error("webhook secret unavailable", "err", err)
		http.Error(w, "webhook secret not configured", http.StatusInternalServerError)
		return
	}
	if !h.authentic(r, body, secret) {
		h.log.Warn("rejected webhook: bad or missing signature", "remote", r.RemoteAddr)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	h.handle(w, r, body)
}

// handle answers an authentic request: a ping, an event other than a push, a push to refs
// the source does not follow, or a push that triggers a fetch.
func (h *webhook) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	event, named := h.event(r)
	switch {
	case event == "ping":
		fmt.Fprintln(w, "pong")
		return
	case named && !pushEvents[event]:
		h.log.Debug("ignored event", "event", event)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, "ignored: event %q\n", event)
		return
	}
	if refs := payloadRefs(body); len(refs) > 0 && !h.follows(refs) {
		h.log.Debug("ignored push to another ref", "refs", refs)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, "ignored: ref %s is not followed\n", strings.Join(refs, ", "))
		return
	}
	h.src.Trigger()
	h.log.Info("webhook triggered a fetch", "event", event, "remote", r.RemoteAddr)
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintln(w, "triggered")
}

// event returns the event the request announces and whether it names one. The GitHub and
// GitLab routes always name one (a request without their header is an unnamed event, which
// is not a push); the generic route reads the first event header of any forge.
func (h *webhook) event(r *http.Request) (string, bool) {
	for _, name := range eventHeaders[h.kind] {
		if v := r.Header.Get(name); v != "" {
			return v, true
		}
	}
	return "", h.kind != WebhookGeneric
}

// follows reports whether a push to one of refs concerns the source; a source that is not
// a RefMatcher follows every ref.
func (h *webhook) follows(refs []string) bool {
	m, ok := h.src.(RefMatcher)
	return !ok || slices.ContainsFunc(refs, m.MatchesRef)
}

// authentic checks the request's signature or token against secret.
func (h *webhook) authentic(r *http.Request, body []byte, secret string) bool {
	if h.kind == WebhookGitLab {
		return equalSecret(r.Header.Get("X-Gitlab-Token"), secret)
	}
	for _, s := range signatures[h.kind] {
		if v := r.Header.Get(s.header); v != "" {
			return s.valid(v, body, secret) // the first header present decides
		}
	}
	return false
}

// validHMAC reports whether sigHex is the HMAC-SHA256 of body under secret.
func validHMAC(body []byte, secret, sigHex string) bool {
	sig, err := hex.DecodeString(sigHex)
	if err != nil || len(sig) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}

// equalSecret compares in constant time, lengths included (both sides are hashed first).
func equalSecret(got, secret string) bool {
	if got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
