package git

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeTrigger counts triggers and follows one ref (refs/heads/main when follow is "").
type fakeTrigger struct {
	n      atomic.Int32
	follow string
}

func (f *fakeTrigger) Trigger() { f.n.Add(1) }
func (f *fakeTrigger) MatchesRef(ref string) bool {
	return ref == cmp.Or(f.follow, "refs/heads/main")
}

func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestWebhook(t *testing.T) {
	const secret = "hook-secret"
	secretFile := writeSecret(t, secret+"\n")
	push := func(ref string) string { return `{"ref":"` + ref + `","after":"abc"}` }
	mainPush := push("refs/heads/main")
	type header = map[string]string
	tests := map[string]struct {
		kind        WebhookKind
		method      string
		body        string
		header      header
		wantStatus  int
		wantTrigger bool
		wantBody    string
	}{
		"github valid": {WebhookGitHub, "POST", mainPush,
			header{"X-Hub-Signature-256": "sha256=" + sign(secret, mainPush), "X-GitHub-Event": "push"},
			http.StatusAccepted, true, "triggered"},
		"github invalid": {WebhookGitHub, "POST", mainPush,
			header{"X-Hub-Signature-256": "sha256=" + sign("other", mainPush)}, http.StatusUnauthorized, false, ""},
		"github tampered body": {WebhookGitHub, "POST", push("refs/heads/dev"),
			header{"X-Hub-Signature-256": "sha256=" + sign(secret, mainPush)}, http.StatusUnauthorized, false, ""},
		"github no prefix": {WebhookGitHub, "POST", mainPush,
			header{"X-Hub-Signature-256": sign(secret, mainPush)}, http.StatusUnauthorized, false, ""},
		"github missing": {WebhookGitHub, "POST", mainPush, header{}, http.StatusUnauthorized, false, ""},
		"github ping": {WebhookGitHub, "POST", `{"zen":"hi"}`,
			header{"X-Hub-Signature-256": "sha256=" + sign(secret, `{"zen":"hi"}`), "X-GitHub-Event": "ping"},
			http.StatusOK, false, "pong"},
		"github other branch": {WebhookGitHub, "POST", push("refs/heads/dev"),
			header{"X-Hub-Signature-256": "sha256=" + sign(secret, push("refs/heads/dev")), "X-GitHub-Event": "push"},
			http.StatusAccepted, false, "ignored"},
		"github GET": {WebhookGitHub, "GET", "", header{}, http.StatusMethodNotAllowed, false, ""},
		"github too large": {WebhookGitHub, "POST", strings.Repeat("x", MaxWebhookBody+1),
			header{"X-Hub-Signature-256": "sha256=" + sign(secret, strings.Repeat("x", MaxWebhookBody+1))},
			http.StatusRequestEntityTooLarge, false, ""},
		"gitlab right token": {WebhookGitLab, "POST", mainPush,
			header{"X-Gitlab-Token": secret, "X-Gitlab-Event": "Push Hook"}, http.StatusAccepted, true, "triggered"},
		"gitlab no event header": {WebhookGitLab, "POST", mainPush, header{"X-Gitlab-Token": secret},
			http.StatusAccepted, false, "ignored: event"},
		"github no event header": {WebhookGitHub, "POST", mainPush,
			header{"X-Hub-Signature-256": "sha256=" + sign(secret, mainPush)}, http.StatusAccepted, false, "ignored: event"},
		"gitlab wrong token": {WebhookGitLab, "POST", mainPush, header{"X-Gitlab-Token": "guess"},
			http.StatusUnauthorized, false, ""},
		"gitlab missing token": {WebhookGitLab, "POST", mainPush, header{}, http.StatusUnauthorized, false, ""},
		"gitlab other branch": {WebhookGitLab, "POST", push("refs/heads/dev"),
			header{"X-Gitlab-Token": secret, "X-Gitlab-Event": "Push Hook"},
			http.StatusAccepted, false, "ignored"},
		"generic X-Signature-256": {WebhookGeneric, "POST", "not json",
			header{"X-Signature-256": sign(secret, "not json")}, http.StatusAccepted, true, "triggered"},
		"generic hub header": {WebhookGeneric, "POST", mainPush,
			header{"X-Hub-Signature-256": "sha256=" + sign(secret, mainPush)}, http.StatusAccepted, true, "triggered"},
		"generic invalid": {WebhookGeneric, "POST", mainPush,
			header{"X-Signature-256": "zz" + sign(secret, mainPush)[2:]}, http.StatusUnauthorized, false, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			trig := &fakeTrigger{}
			h := NewWebhookHandler(tc.kind, secretFile, trig, nil)
			req := httptest.NewRequest(tc.method, "/hook", strings.NewReader(tc.body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d (%s)", rec.Code, tc.wantStatus, rec.Body)
			}
			if got := trig.n.Load() == 1; got != tc.wantTrigger {
				t.Errorf("triggered = %v, want %v", got, tc.wantTrigger)
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("body = %q, want it to contain %q", rec.Body, tc.wantBody)
			}
		})
	}
}

func TestWebhookSecretUnavailable(t *testing.T) {
	for name, file := range map[string]string{"empty": writeSecret(t, "\n"), "missing": "/nonexistent/secret"} {
		t.Run(name, func(t *testing.T) {
			trig := &fakeTrigger{}
			h := NewWebhookHandler(WebhookGitLab, file, trig, nil)
			req := httptest.NewRequest("POST", "/hook", strings.NewReader("{}"))
			req.Header.Set("X-Gitlab-Token", "")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusInternalServerError || trig.n.Load() != 0 {
				t.Errorf("status = %d, triggers = %d; want 500 and none", rec.Code, trig.n.Load())
			}
		})
	}
}

func TestWebhookTriggersSource(t *testing.T) {
	r := newTestRemote(t, nil)
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	secretFile := writeSecret(t, "tok")
	h := NewWebhookHandler(WebhookGitLab, secretFile, s, nil)
	for ref, want := range map[string]bool{"refs/heads/dev": false, "refs/heads/main": true} {
		req := httptest.NewRequest("POST", "/hook", strings.NewReader(`{"ref":"`+ref+`"}`))
		req.Header.Set("X-Gitlab-Token", "tok")
		req.Header.Set("X-Gitlab-Event", "Push Hook")
		h.ServeHTTP(httptest.NewRecorder(), req)
		if got := waitSignal(s.Changes(), 0); got != want {
			t.Errorf("push to %s: signalled = %v, want %v", ref, got, want)
		}
	}
}

func TestParseWebhookKind(t *testing.T) {
	if k, err := ParseWebhookKind("GitHub"); err != nil || k != WebhookGitHub {
		t.Errorf("ParseWebhookKind(GitHub) = %q, %v", k, err)
	}
	if _, err := ParseWebhookKind("bitbucket"); err == nil {
		t.Error("ParseWebhookKind accepted an unknown kind")
	}
}
