package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"regexp"
	"strings"
	"testing"
	"time"
)

// hostile is an Event whose names a team chose try mentions, links and markup.
var hostile = Event{
	Reason: SyncFailed, Severity: SeverityError, Namespace: "alice", Key: "sync", Revision: "0123abcd",
	Time:    time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC),
	Message: "revision 0123abcd not applied: <!channel> & <@here>",
	Details: []string{
		"teams/alice/<!channel>.yaml:12: image: required",
		"teams/alice/a&b.yaml:3: **bold** [link](https://evil.example) <at>everyone</at>",
	},
}

func sendTo(t *testing.T, typ ProviderType, secret []byte, e Event) post {
	t.Helper()
	rc := newReceiver(t)
	cfg := &Config{Providers: []Provider{{Name: "p", Type: typ, URL: rc.URL + "/p", Secret: secret}}, Routes: []Route{{Provider: "p"}}}
	d := dispatch(t, cfg, DispatcherOptions{Cluster: "prod"})
	d.Send(e)
	flush(t, d)
	ps := rc.at("/p")
	if len(ps) != 1 {
		t.Fatalf("%d posts, want 1", len(ps))
	}
	if ct := ps[0].header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return ps[0]
}

func TestSlackPayload(t *testing.T) {
	p := sendTo(t, ProviderSlack, nil, hostile)
	var got struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	dec := json.NewDecoder(strings.NewReader(string(p.body)))
	dec.DisallowUnknownFields()
	must(t, dec.Decode(&got))
	if got.Text != "[prod] ERROR SyncFailed alice: revision 0123abcd not applied: &lt;!channel&gt; &amp; &lt;@here&gt;" {
		t.Errorf("text %q", got.Text)
	}
	if len(got.Blocks) != 2 {
		t.Fatalf("blocks %+v", got.Blocks)
	}
	for _, b := range got.Blocks {
		if b.Type != "section" || b.Text.Type != "mrkdwn" {
			t.Errorf("block %+v", b)
		}
		// Outside of an escape, no <, > or & remains: no mention, no link.
		if rest := regexp.MustCompile(`&(amp|lt|gt);`).ReplaceAllString(b.Text.Text, ""); strings.ContainsAny(rest, "<>&") {
			t.Errorf("unescaped control character in %q", b.Text.Text)
		}
	}
	if want := "```\nrevision: 0123abcd\nteams/alice/&lt;!channel&gt;.yaml:12: image: required\n"; !strings.HasPrefix(got.Blocks[1].Text.Text, want) {
		t.Errorf("details %q, want them to start %q", got.Blocks[1].Text.Text, want)
	}
}

func TestTeamsPayload(t *testing.T) {
	p := sendTo(t, ProviderTeams, nil, hostile)
	var got struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string  `json:"contentType"`
			ContentURL  *string `json:"contentUrl"`
			Content     struct {
				Schema  string `json:"$schema"`
				Type    string `json:"type"`
				Version string `json:"version"`
				Body    []struct {
					Type     string `json:"type"`
					Text     string `json:"text"`
					Wrap     bool   `json:"wrap"`
					Weight   string `json:"weight"`
					Color    string `json:"color"`
					FontType string `json:"fontType"`
					Spacing  string `json:"spacing"`
				} `json:"body"`
			} `json:"content"`
		} `json:"attachments"`
	}
	dec := json.NewDecoder(strings.NewReader(string(p.body)))
	dec.DisallowUnknownFields()
	must(t, dec.Decode(&got))
	if got.Type != "message" || len(got.Attachments) != 1 {
		t.Fatalf("payload %s", p.body)
	}
	a := got.Attachments[0]
	if a.ContentType != "application/vnd.microsoft.card.adaptive" || a.ContentURL != nil || !strings.Contains(string(p.body), `"contentUrl":null`) {
		t.Errorf("attachment %s", p.body)
	}
	c := a.Content
	if c.Type != "AdaptiveCard" || c.Version != "1.4" || c.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" || len(c.Body) != 4 {
		t.Fatalf("card %s", p.body)
	}
	for _, b := range c.Body {
		if b.Type != "TextBlock" || !b.Wrap || b.Text == "" {
			t.Errorf("block %+v", b)
		}
	}
	if c.Body[0].Color != "Attention" || c.Body[0].Weight != "Bolder" {
		t.Errorf("headline %+v", c.Body[0])
	}
	if want := `teams/alice/a&b.yaml:3: \*\*bold\*\* \[link\]\(https://evil.example\) &lt;at&gt;everyone&lt;/at&gt;`; c.Body[3].Text != want {
		t.Errorf("hostile detail %q, want %q", c.Body[3].Text, want)
	}
}

func TestWebhookSignature(t *testing.T) {
	key := []byte("alice's key")
	p := sendTo(t, ProviderWebhook, key, hostile)
	// As a receiver checks it: HMAC-SHA256 of the exact body, compared in constant time.
	mac := hmac.New(sha256.New, key)
	mac.Write(p.body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if got := p.header.Get("X-Gpuctl-Signature"); !hmac.Equal([]byte(got), []byte(want)) {
		t.Errorf("signature %q, want %q", got, want)
	}
	var w WebhookPayload
	must(t, json.Unmarshal(p.body, &w))
	if w.Reason != SyncFailed || w.Cluster != "prod" || w.Namespace != "alice" || w.Key != "sync" || len(w.Details) != 2 || !w.Time.Equal(hostile.Time) {
		t.Errorf("payload %s", p.body)
	}
	if p.header.Get("X-Gpuctl-Event") != "SyncFailed" || w.Delivery == "" || p.header.Get("X-Gpuctl-Delivery") != w.Delivery {
		t.Errorf("headers %v, delivery %q", p.header, w.Delivery)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(w.Delivery) {
		t.Errorf("delivery %q is not a UUID", w.Delivery)
	}
	// Unsigned without a key.
	if p := sendTo(t, ProviderWebhook, nil, hostile); p.header.Get("X-Gpuctl-Signature") != "" {
		t.Errorf("a provider without a key signs: %v", p.header)
	}
}

func TestMessageBounds(t *testing.T) {
	e := Event{Reason: SyncFailed, Severity: SeverityError, Message: "line one\nline two", Key: "sync"}
	for range 15 {
		e.Details = append(e.Details, strings.Repeat("x", 400))
	}
	m := message{Event: e}
	if h := m.Headline(); h != "ERROR SyncFailed: line one line two" {
		t.Errorf("headline %q", h)
	}
	lines := m.Lines()
	if len(lines) != 11 || lines[10] != "… and 5 more" {
		t.Fatalf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > maxLineLength {
			t.Errorf("a line of %d characters", n)
		}
	}
}

// The bar at the dispatcher: a failed sync sends one Slack message and one signed
// webhook, 20 failing syncs no more, the recovery one more each.
func TestFailedSyncSlackAndWebhook(t *testing.T) {
	rc := newReceiver(t)
	key := []byte("k3y")
	cfg := &Config{
		Providers: []Provider{{Name: "ops-slack", Type: ProviderSlack, URL: rc.URL + "/slack"},
			{Name: "hook", Type: ProviderWebhook, URL: rc.URL + "/hook", Secret: key}},
		Routes: []Route{{Provider: "ops-slack", Reasons: []Reason{SyncFailed, SyncRecovered}}, {Provider: "hook"}},
	}
	d := dispatch(t, cfg, DispatcherOptions{Cluster: "prod"})
	for range 20 {
		d.Send(failed("sync"))
	}
	d.Send(recovered("sync"))
	flush(t, d)
	slackPosts, hookPosts := rc.at("/slack"), rc.at("/hook")
	if len(slackPosts) != 2 || len(hookPosts) != 2 {
		t.Fatalf("%d Slack messages and %d webhooks, want 2 and 2", len(slackPosts), len(hookPosts))
	}
	for i, want := range []string{"SyncFailed", "SyncRecovered"} {
		headline := []string{"[prod] ERROR SyncFailed: ", "[prod] INFO SyncRecovered: "}[i]
		if !strings.Contains(string(slackPosts[i].body), headline) {
			t.Errorf("Slack message %d: %s", i, slackPosts[i].body)
		}
		p := hookPosts[i]
		mac := hmac.New(sha256.New, key)
		mac.Write(p.body)
		if !hmac.Equal([]byte(p.header.Get("X-Gpuctl-Signature")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil)))) || p.header.Get("X-Gpuctl-Event") != want {
			t.Errorf("webhook %d: headers %v", i, p.header)
		}
	}
}
