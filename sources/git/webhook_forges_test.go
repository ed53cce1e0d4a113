package git

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// forgeHeaders are the headers each forge sends with a payload of testdata/webhooks (see its
// README), without the signature.
func forgeHeaders(event string) map[string]string {
	switch event {
	case "gitea:push":
		return map[string]string{"X-Gitea-Event": "push", "X-Gogs-Event": "push", "X-GitHub-Event": "push"}
	case "Push Hook", "Merge Request Hook":
		return map[string]string{"X-Gitlab-Event": event}
	case "repo:push":
		return map[string]string{"X-Event-Key": event}
	}
	return map[string]string{"X-GitHub-Event": event}
}

// signForge adds the secret the way the route expects it: GitLab's token, GitHub's
// X-Hub-Signature-256, and on the generic route the header of the forge that sent it.
func signForge(req *http.Request, kind WebhookKind, event, secret string, body []byte) {
	switch {
	case kind == WebhookGitLab:
		req.Header.Set("X-Gitlab-Token", secret)
	case kind == WebhookGeneric && event == "gitea:push":
		req.Header.Set("X-Gitea-Signature", sign(secret, string(body)))
	case kind == WebhookGeneric && event == "repo:push":
		req.Header.Set("X-Hub-Signature", "sha256="+sign(secret, string(body)))
	default:
		req.Header.Set("X-Hub-Signature-256", "sha256="+sign(secret, string(body)))
	}
}

// TestWebhookForgePayloads sends the forges' own example payloads, signed as each forge signs
// them: a push to the followed branch or tag triggers exactly one fetch; a push to another
// branch, a tag while a branch is followed, a pull request, a merge request and a ping
// trigger none and say why.
func TestWebhookForgePayloads(t *testing.T) {
	const secret = "forge-secret"
	secretFile := writeSecret(t, secret)
	tests := map[string]struct {
		kind        WebhookKind
		file, event string
		follow      string // the ref the source follows
		wantStatus  int
		wantTrigger bool
		wantBody    string
	}{
		"github push to the followed tag": {WebhookGitHub, "github-push.json", "push", "refs/tags/simple-tag",
			http.StatusAccepted, true, "triggered"},
		"github tag push while following a branch": {WebhookGitHub, "github-push.json", "push", "refs/heads/master",
			http.StatusAccepted, false, "ignored: ref refs/tags/simple-tag is not followed"},
		"github pull_request": {WebhookGitHub, "github-pull_request.json", "pull_request", "refs/heads/master",
			http.StatusAccepted, false, `ignored: event "pull_request"`},
		"github pull_request on the generic route": {WebhookGeneric, "github-pull_request.json", "pull_request",
			"refs/heads/master", http.StatusAccepted, false, `ignored: event "pull_request"`},
		"github ping": {WebhookGitHub, "github-ping.json", "ping", "refs/heads/master",
			http.StatusOK, false, "pong"},
		"gitlab push to the followed branch": {WebhookGitLab, "gitlab-push.json", "Push Hook", "refs/heads/master",
			http.StatusAccepted, true, "triggered"},
		"gitlab push to another branch": {WebhookGitLab, "gitlab-push.json", "Push Hook", "refs/heads/main",
			http.StatusAccepted, false, "ignored: ref refs/heads/master is not followed"},
		"gitlab merge request": {WebhookGitLab, "gitlab-merge-request.json", "Merge Request Hook", "refs/heads/master",
			http.StatusAccepted, false, `ignored: event "Merge Request Hook"`},
		"gitlab push on the generic route": {WebhookGeneric, "gitlab-push.json", "Push Hook", "refs/heads/master",
			http.StatusAccepted, true, "triggered"},
		"gitlab merge request on the generic route": {WebhookGeneric, "gitlab-merge-request.json", "Merge Request Hook",
			"refs/heads/master", http.StatusAccepted, false, `ignored: event "Merge Request Hook"`},
		"gitea push to the followed branch": {WebhookGeneric, "gitea-push.json", "gitea:push", "refs/heads/develop",
			http.StatusAccepted, true, "triggered"},
		"gitea push to another branch": {WebhookGeneric, "gitea-push.json", "gitea:push", "refs/heads/main",
			http.StatusAccepted, false, "ignored: ref refs/heads/develop is not followed"},
		"gitea push on the github route": {WebhookGitHub, "gitea-push.json", "gitea:push", "refs/heads/develop",
			http.StatusAccepted, true, "triggered"},
		"bitbucket push to the followed branch": {WebhookGeneric, "bitbucket-push.json", "repo:push",
			"refs/heads/name-of-branch", http.StatusAccepted, true, "triggered"},
		"bitbucket push to another branch": {WebhookGeneric, "bitbucket-push.json", "repo:push", "refs/heads/main",
			http.StatusAccepted, false, "ignored: ref refs/heads/name-of-branch is not followed"},
		"bitbucket push while following a tag of that name": {WebhookGeneric, "bitbucket-push.json", "repo:push",
			"refs/tags/name-of-branch", http.StatusAccepted, false, "is not followed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "webhooks", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			trig := &fakeTrigger{follow: tc.follow}
			req := httptest.NewRequest(http.MethodPost, "/hooks/"+string(tc.kind), strings.NewReader(string(body)))
			for k, v := range forgeHeaders(tc.event) {
				req.Header.Set(k, v)
			}
			signForge(req, tc.kind, tc.event, secret, body)
			rec := httptest.NewRecorder()
			NewWebhookHandler(tc.kind, secretFile, trig, nil).ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("answer = %d %q, want %d containing %q", rec.Code, rec.Body, tc.wantStatus, tc.wantBody)
			}
			want := int32(0)
			if tc.wantTrigger {
				want = 1
			}
			if got := trig.n.Load(); got != want {
				t.Errorf("triggers = %d, want %d", got, want)
			}
		})
	}
}

// TestWebhookSignatureStyles: each header style a route checks accepts the right signature
// and refuses (401, no trigger) a wrong one, a SHA-1 one or one without its required prefix;
// the first signature header present decides, so a forged one is not rescued by another.
func TestWebhookSignatureStyles(t *testing.T) {
	const secret = "forge-secret"
	secretFile := writeSecret(t, secret)
	body, err := os.ReadFile(filepath.Join("testdata", "webhooks", "gitea-push.json"))
	if err != nil {
		t.Fatal(err)
	}
	good, bad := sign(secret, string(body)), sign("guess", string(body))
	type header = map[string]string
	tests := map[string]struct {
		kind   WebhookKind
		header header
		want   int
	}{
		"github X-Hub-Signature-256":             {WebhookGitHub, header{"X-Hub-Signature-256": "sha256=" + good}, http.StatusAccepted},
		"github X-Hub-Signature-256 wrong":       {WebhookGitHub, header{"X-Hub-Signature-256": "sha256=" + bad}, http.StatusUnauthorized},
		"github X-Gitea-Signature not checked":   {WebhookGitHub, header{"X-Gitea-Signature": good}, http.StatusUnauthorized},
		"gitlab X-Gitlab-Token":                  {WebhookGitLab, header{"X-Gitlab-Token": secret}, http.StatusAccepted},
		"gitlab X-Gitlab-Token wrong":            {WebhookGitLab, header{"X-Gitlab-Token": "guess"}, http.StatusUnauthorized},
		"gitlab HMAC is not a token":             {WebhookGitLab, header{"X-Hub-Signature-256": "sha256=" + good}, http.StatusUnauthorized},
		"generic X-Signature-256":                {WebhookGeneric, header{"X-Signature-256": good}, http.StatusAccepted},
		"generic X-Signature-256 wrong":          {WebhookGeneric, header{"X-Signature-256": bad}, http.StatusUnauthorized},
		"generic X-Hub-Signature-256":            {WebhookGeneric, header{"X-Hub-Signature-256": "sha256=" + good}, http.StatusAccepted},
		"generic X-Hub-Signature-256 wrong":      {WebhookGeneric, header{"X-Hub-Signature-256": "sha256=" + bad}, http.StatusUnauthorized},
		"generic X-Gitea-Signature":              {WebhookGeneric, header{"X-Gitea-Signature": good}, http.StatusAccepted},
		"generic X-Gitea-Signature wrong":        {WebhookGeneric, header{"X-Gitea-Signature": bad}, http.StatusUnauthorized},
		"generic X-Gitea-Signature with prefix":  {WebhookGeneric, header{"X-Gitea-Signature": "sha256=" + good}, http.StatusUnauthorized},
		"generic X-Gogs-Signature":               {WebhookGeneric, header{"X-Gogs-Signature": good}, http.StatusAccepted},
		"generic X-Gogs-Signature wrong":         {WebhookGeneric, header{"X-Gogs-Signature": bad}, http.StatusUnauthorized},
		"generic X-Hub-Signature (Bitbucket)":    {WebhookGeneric, header{"X-Hub-Signature": "sha256=" + good}, http.StatusAccepted},
		"generic X-Hub-Signature wrong":          {WebhookGeneric, header{"X-Hub-Signature": "sha256=" + bad}, http.StatusUnauthorized},
		"generic X-Hub-Signature without prefix": {WebhookGeneric, header{"X-Hub-Signature": good}, http.StatusUnauthorized},
		"generic X-Hub-Signature SHA-1":          {WebhookGeneric, header{"X-Hub-Signature": "sha1=" + good}, http.StatusUnauthorized},
		"generic no signature":                   {WebhookGeneric, header{}, http.StatusUnauthorized},
		"generic wrong first, right second": {WebhookGeneric,
			header{"X-Hub-Signature-256": "sha256=" + bad, "X-Gitea-Signature": good}, http.StatusUnauthorized},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			trig := &fakeTrigger{follow: "refs/heads/develop"}
			req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(string(body)))
			req.Header.Set("X-Gitea-Event", "push")
			req.Header.Set("X-GitHub-Event", "push")
			req.Header.Set("X-Gitlab-Event", "Push Hook")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			NewWebhookHandler(tc.kind, secretFile, trig, nil).ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("status = %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
			if triggered := trig.n.Load() > 0; triggered != (tc.want == http.StatusAccepted) {
				t.Errorf("triggered = %v with status %d", triggered, rec.Code)
			}
		})
	}
}

// TestWebhookOversizedBody: a body over MaxWebhookBody is refused with 413 on every route,
// before its signature is checked, and triggers nothing.
func TestWebhookOversizedBody(t *testing.T) {
	secretFile := writeSecret(t, "s")
	body := `{"ref":"refs/heads/main","pad":"` + strings.Repeat("x", MaxWebhookBody) + `"}`
	for _, kind := range []WebhookKind{WebhookGitHub, WebhookGitLab, WebhookGeneric} {
		trig := &fakeTrigger{}
		req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Gitlab-Event", "Push Hook")
		req.Header.Set("X-Gitlab-Token", "s")
		req.Header.Set("X-Hub-Signature-256", "sha256="+sign("s", body))
		rec := httptest.NewRecorder()
		NewWebhookHandler(kind, secretFile, trig, nil).ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || trig.n.Load() != 0 {
			t.Errorf("%s: status %d, triggers %d; want 413 and none", kind, rec.Code, trig.n.Load())
		}
	}
}
