package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a test server that records what providers post to it.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	posts  []post
	status int
}

type post struct {
	path   string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: http.StatusOK}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.posts = append(r.posts, post{req.URL.Path, req.Header.Clone(), body})
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// at returns the posts to a path.
func (r *receiver) at(path string) []post {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []post
	for _, p := range r.posts {
		if p.path == path {
			ps = append(ps, p)
		}
	}
	return ps
}

// clock is a clock that tests move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newClock() *clock { return &clock{now: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)} }

// dispatch starts a Dispatcher that the test closes.
func dispatch(t *testing.T, cfg *Config, o DispatcherOptions) *Dispatcher {
	if o.RetryBackoff == 0 {
		o.RetryBackoff = time.Millisecond
	}
	d := NewDispatcher(cfg, o)
	t.Cleanup(d.Close)
	return d
}

func flush(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func texts(ps []post) []string {
	var s []string
	for _, p := range ps {
		var w WebhookPayload
		if err := json.Unmarshal(p.body, &w); err != nil {
			s = append(s, string(p.body))
			continue
		}
		s = append(s, w.Text)
	}
	return s
}

func failed(key string) Event {
	return Event{Reason: SyncFailed, Severity: SeverityError, Key: key, Message: "revision 0123abcd not applied"}
}

func recovered(key string) Event {
	return Event{Reason: SyncRecovered, Severity: SeverityInfo, Key: key, Resolved: true, Message: "revision 4567 applied"}
}

func TestRouting(t *testing.T) {
	rc := newReceiver(t)
	cfg := &Config{
		Providers: []Provider{
			{Name: "ops", Type: ProviderWebhook, URL: rc.URL + "/ops"},
			{Name: "alice", Type: ProviderWebhook, URL: rc.URL + "/alice"},
			{Name: "errors", Type: ProviderWebhook, URL: rc.URL + "/errors"},
		},
		Routes: []Route{
			{Provider: "ops", Reasons: []Reason{SyncFailed, ShadowWorkload}},
			{Provider: "alice", Teams: []string{"alice"}},
			{Provider: "errors", Severities: []Severity{SeverityError}},
			{Provider: "errors", Teams: []string{"bob"}}, // a second route to the same provider: one message
		},
	}
	d := dispatch(t, cfg, DispatcherOptions{Cluster: "prod"})
	d.Send(Event{Reason: SyncFailed, Severity: SeverityError, Key: "sync", Message: "cluster-wide"})
	d.Send(Event{Reason: ShadowWorkload, Severity: SeverityWarning, Namespace: "alice", Key: "shadow/alice/x", Message: "alice shadow"})
	d.Send(Event{Reason: JobFailed, Severity: SeverityError, Namespace: "bob", Key: "job/bob/sft", Message: "bob job"})
	d.Send(Event{Reason: Drift, Severity: SeverityWarning, Namespace: "carol", Key: "drift/carol/x", Message: "carol drift"})
	flush(t, d)
	want := map[string][]string{
		"/ops":    {"[prod] ERROR SyncFailed: cluster-wide", "[prod] WARNING ShadowWorkload alice: alice shadow"},
		"/alice":  {"[prod] WARNING ShadowWorkload alice: alice shadow"}, // not the cluster's Event
		"/errors": {"[prod] ERROR SyncFailed: cluster-wide", "[prod] ERROR JobFailed bob: bob job"},
	}
	for path, w := range want {
		if got := texts(rc.at(path)); strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("%s got %q, want %q", path, got, w)
		}
	}
}

func TestDedupe(t *testing.T) {
	rc := newReceiver(t)
	clk := newClock()
	cfg := &Config{Providers: []Provider{{Name: "ops", Type: ProviderWebhook, URL: rc.URL + "/ops"}}, Routes: []Route{{Provider: "ops"}}}
	d := dispatch(t, cfg, DispatcherOptions{Now: clk.Now, RatePerMinute: 1000})
	d.Send(recovered("sync")) // nothing to recover from
	for range 20 {
		d.Send(failed("sync"))
		clk.Add(time.Minute)
	}
	flush(t, d)
	if n := len(rc.at("/ops")); n != 1 {
		t.Fatalf("20 failed syncs sent %d messages, want 1", n)
	}
	d.Send(recovered("sync"))
	d.Send(recovered("sync"))
	flush(t, d)
	if got := texts(rc.at("/ops")); len(got) != 2 || !strings.Contains(got[1], "SyncRecovered") {
		t.Fatalf("after the recovery: %q, want one more, SyncRecovered", got)
	}
	d.Send(failed("sync"))
	d.Send(failed("sync"))
	d.Send(Event{Reason: SyncFailed, Severity: SeverityError, Namespace: "alice", Key: "sync", Message: "alice's scope held"}) // another team's condition
	flush(t, d)
	if got := texts(rc.at("/ops")); len(got) != 4 {
		t.Fatalf("a failure after the recovery and alice's: %q, want 4 messages in all", got)
	}
}

func TestDedupeRepeatInterval(t *testing.T) {
	rc := newReceiver(t)
	clk := newClock()
	cfg := &Config{Providers: []Provider{{Name: "ops", Type: ProviderWebhook, URL: rc.URL + "/ops"}},
		Routes: []Route{{Provider: "ops"}}, RepeatInterval: 4 * time.Hour}
	d := dispatch(t, cfg, DispatcherOptions{Now: clk.Now})
	d.Send(failed("sync"))
	clk.Add(3 * time.Hour)
	d.Send(failed("sync"))
	clk.Add(time.Hour)
	d.Send(failed("sync")) // 4 h after it was sent
	d.Send(failed("sync"))
	flush(t, d)
	if n := len(rc.at("/ops")); n != 2 {
		t.Fatalf("sent %d messages, want 2 (the failure and its repeat after 4h)", n)
	}
}

func TestRateLimit(t *testing.T) {
	rc := newReceiver(t)
	clk := newClock()
	cfg := &Config{Providers: []Provider{{Name: "ops", Type: ProviderWebhook, URL: rc.URL + "/ops"}}, Routes: []Route{{Provider: "ops"}}}
	d := dispatch(t, cfg, DispatcherOptions{Now: clk.Now, RatePerMinute: 2})
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		d.Send(failed(k))
	}
	flush(t, d)
	if n := len(rc.at("/ops")); n != 2 {
		t.Fatalf("sent %d messages, want 2 (the rate)", n)
	}
	clk.Add(30 * time.Second) // one more token
	d.Send(failed("c"))       // dropped before, so not open: sent now
	flush(t, d)
	ps := rc.at("/ops")
	if len(ps) != 3 {
		t.Fatalf("sent %d messages, want 3", len(ps))
	}
	var w WebhookPayload
	must(t, json.Unmarshal(ps[2].body, &w))
	if w.DroppedRateLimit != 3 || !strings.HasSuffix(w.Text, "(3 more alerts were dropped: rate limit)") {
		t.Errorf("the message after the drops: %d dropped, text %q", w.DroppedRateLimit, w.Text)
	}
}

func TestHangingProviderDoesNotBlock(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	cfg := &Config{Providers: []Provider{{Name: "stuck", Type: ProviderSlack, URL: hang.URL + "/x"}}, Routes: []Route{{Provider: "stuck"}}}
	d := dispatch(t, cfg, DispatcherOptions{RatePerMinute: 100000, QueueSize: 10})
	start := time.Now()
	for i := range 1000 {
		d.Send(Event{Reason: JobFailed, Severity: SeverityError, Message: "job failed", Key: strings.Repeat("k", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()})
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("1000 Sends took %v with a provider that hangs", took)
	}
	d.mu.Lock()
	tg := d.targets["stuck"]
	queued, full := len(tg.queue), tg.full
	note := ""
	if len(tg.queue) > 0 {
		note = strings.Join(tg.queue[len(tg.queue)-1].Notes(), " ")
	}
	d.mu.Unlock()
	if queued != 10 || full != 0 || note != "(1 more alert was dropped: queue full)" {
		t.Errorf("queue %d (want 10), uncounted %d, last note %q", queued, full, note)
	}
}

func TestSecretsNotLogged(t *testing.T) {
	rc := newReceiver(t)
	rc.status = http.StatusInternalServerError
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL + "/services/SECRETPATH"
	down.Close()
	var logs bytes.Buffer
	cfg := &Config{
		Providers: []Provider{
			{Name: "flaky-hook", Type: ProviderWebhook, URL: rc.URL + "/hooks/SECRETPATH", Secret: []byte("SECRETKEY")},
			{Name: "down-slack", Type: ProviderSlack, URL: downURL},
		},
		Routes: []Route{{Provider: "flaky-hook"}, {Provider: "down-slack"}},
	}
	d := dispatch(t, cfg, DispatcherOptions{Log: slog.New(slog.NewTextHandler(&logs, nil)), Retries: 2})
	d.Send(failed("sync"))
	flush(t, d)
	if n := len(rc.at("/hooks/SECRETPATH")); n != 3 {
		t.Errorf("a 500 was posted %d times, want 3 (2 retries)", n)
	}
	out := logs.String()
	for _, want := range []string{"provider=flaky-hook", "500 Internal Server Error", "provider=down-slack", "3 attempts"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SECRETPATH") || strings.Contains(out, "SECRETKEY") {
		t.Errorf("the log shows a URL or key:\n%s", out)
	}
}

func TestNoRetryOn4xx(t *testing.T) {
	rc := newReceiver(t)
	rc.status = http.StatusNotFound
	cfg := &Config{Providers: []Provider{{Name: "gone", Type: ProviderWebhook, URL: rc.URL + "/gone"}}, Routes: []Route{{Provider: "gone"}}}
	d := dispatch(t, cfg, DispatcherOptions{})
	d.Send(failed("sync"))
	flush(t, d)
	if n := len(rc.at("/gone")); n != 1 {
		t.Errorf("a 404 was posted %d times, want 1", n)
	}
}

func TestRateLimitCountsAnAlertOnce(t *testing.T) {
	rc := newReceiver(t)
	clk := newClock()
	cfg := &Config{Providers: []Provider{{Name: "ops", Type: ProviderWebhook, URL: rc.URL + "/ops"}},
		Routes: []Route{{Provider: "ops"}, {Provider: "ops", Severities: []Severity{SeverityError}}}}
	d := dispatch(t, cfg, DispatcherOptions{Now: clk.Now, RatePerMinute: 1})
	d.Send(failed("a"))
	d.Send(failed("b")) // two routes, one provider: one alert dropped
	clk.Add(time.Minute)
	d.Send(failed("c"))
	flush(t, d)
	got := texts(rc.at("/ops"))
	if len(got) != 2 || !strings.HasSuffix(got[1], "(1 more alert was dropped: rate limit)") {
		t.Errorf("messages %q, want 2, the second noting 1 dropped", got)
	}
}

// A closing Event dropped by the rate limit (a DriftResolved, sent once) must not silence
// the condition: the next opening Event of it is sent, and a later closing one is tried again.
func TestRateLimitedResolveDoesNotSilence(t *testing.T) {
	rc := newReceiver(t)
	clk := newClock()
	cfg := &Config{Providers: []Provider{{Name: "ops", Type: ProviderWebhook, URL: rc.URL + "/ops"}}, Routes: []Route{{Provider: "ops"}}}
	d := dispatch(t, cfg, DispatcherOptions{Now: clk.Now, RatePerMinute: 1})
	drift := Event{Reason: Drift, Severity: SeverityWarning, Namespace: "alice", Key: "drift/modified/Deployment/alice/web", Message: "spec.replicas changed"}
	resolved := Event{Reason: DriftResolved, Severity: SeverityInfo, Namespace: "alice", Key: drift.Key, Resolved: true, Message: "matches Git again"}
	d.Send(drift)
	d.Send(resolved) // dropped: the rate is spent
	clk.Add(time.Minute)
	d.Send(drift) // drifted again: a new drift, to be told
	flush(t, d)
	got := texts(rc.at("/ops"))
	if len(got) != 2 || !strings.Contains(got[1], "Drift alice") || !strings.HasSuffix(got[1], "(1 more alert was dropped: rate limit)") {
		t.Fatalf("messages %q, want 2: the drift, and the drift again noting the dropped resolution", got)
	}
	clk.Add(time.Minute)
	d.Send(resolved)
	flush(t, d)
	if got := texts(rc.at("/ops")); len(got) != 3 || !strings.Contains(got[2], "DriftResolved") {
		t.Fatalf("messages %q, want 3, the last DriftResolved", got)
	}

	// A dropped resolution, then another: the second is tried (the condition is still open).
	clk.Add(time.Minute)
	d.Send(Event{Reason: Drift, Severity: SeverityWarning, Namespace: "alice", Key: "k2", Message: "other"})
	clk.Add(time.Minute)
	d.Send(Event{Reason: Drift, Severity: SeverityWarning, Namespace: "alice", Key: "k3", Message: "third"})
	d.Send(Event{Reason: DriftResolved, Severity: SeverityInfo, Namespace: "alice", Key: "k2", Resolved: true, Message: "k2 resolved"}) // dropped
	clk.Add(time.Minute)
	d.Send(Event{Reason: DriftResolved, Severity: SeverityInfo, Namespace: "alice", Key: "k2", Resolved: true, Message: "k2 resolved"})
	flush(t, d)
	if got := texts(rc.at("/ops")); len(got) != 6 || !strings.Contains(got[5], "k2 resolved") {
		t.Fatalf("messages %q, want 6, the last k2's resolution", got)
	}
}
