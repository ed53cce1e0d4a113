package git

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gpuctl/gpuctl/sources"
)

// MaxWebhookBody is the largest webhook body accepted; larger ones get 413.
const MaxWebhookBody = 1 << 20

// WebhookKind names the signature scheme of a webhook sender.
type WebhookKind string

// Webhook kinds.
const (
	// WebhookGitHub checks X-Hub-Signature-256 (sha256=HMAC-SHA256 of the body) and answers
	// the ping event with 200.
	WebhookGitHub WebhookKind = "github"
	// WebhookGitLab checks that X-Gitlab-Token equals the secret.
	WebhookGitLab WebhookKind = "gitlab"
	// WebhookGeneric checks X-Signature-256 or X-Hub-Signature-256: the hex HMAC-SHA256 of
	// the body, with or without a "sha256=" prefix.
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
// a missing or wrong signature (and no trigger), 200 for GitHub's ping, 202 "ignored" for a
// push to a ref that src (when it is a RefMatcher) does not follow, 202 "triggered"
// otherwise. NewWebhookHandler panics on an unknown kind: check flags with
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

// handle answers an authentic request.
func (h *webhook) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	if h.kind == WebhookGitHub && r.Header.Get("X-GitHub-Event") == "ping" {
		fmt.Fprintln(w, "pong")
		return
	}
	if ref := payloadRef(body); ref != "" {
		if m, ok := h.src.(RefMatcher); ok && !m.MatchesRef(ref) {
			h.log.Debug("ignored push to another ref", "ref", ref)
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, "ignored: ref %s is not followed\n", ref)
			return
		}
	}
	h.src.Trigger()
	h.log.Info("webhook triggered a fetch", "remote", r.RemoteAddr)
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintln(w, "triggered")
}

// authentic checks the request's signature or token against secret.
func (h *webhook) authentic(r *http.Request, body []byte, secret string) bool {
	switch h.kind {
	case WebhookGitHub:
		sig, ok := strings.CutPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256=")
		return ok && validHMAC(body, secret, sig)
	case WebhookGitLab:
		return equalSecret(r.Header.Get("X-Gitlab-Token"), secret)
	}
	sig := r.Header.Get("X-Signature-256")
	if sig == "" {
		sig = r.Header.Get("X-Hub-Signature-256")
	}
	return validHMAC(body, secret, strings.TrimPrefix(sig, "sha256="))
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

// payloadRef returns the "ref" field of a JSON push payload (GitHub, GitLab, Gitea), or ""
// when the body does not name one.
func payloadRef(body []byte) string {
	var p struct {
		Ref string `json:"ref"`
	}
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	return p.Ref
}
