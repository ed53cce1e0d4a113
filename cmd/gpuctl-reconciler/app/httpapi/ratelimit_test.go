package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRateLimitPerToken (issue 32, finding 3): a token over its rate gets 429 with Retry-After,
// from the API as JSON and from the page as text, and is not counted for it; another token
// keeps its own rate; an unknown token is a 401, not a 429; a negative limit is none.
func TestRateLimitPerToken(t *testing.T) {
	b := &fakeBackend{}
	h := New(Options{Backend: b, Kube: fake.NewClientset(), Tokens: testTokens, Registry: prometheus.NewRegistry(),
		RateLimit: 0.5, RateBurst: 3})
	for i := range 3 {
		if w := do(t, h, http.MethodGet, "/api/v1/status", teamToken); w.Code != http.StatusOK {
			t.Fatalf("request %d of the burst: %d %s", i+1, w.Code, w.Body)
		}
	}
	w := do(t, h, http.MethodGet, "/api/v1/status", teamToken)
	e := wantError(t, w, http.StatusTooManyRequests)
	if ra := w.Header().Get("Retry-After"); ra != "2" { // 0.5 a second: the next in 2 s
		t.Errorf("Retry-After %q, want 2", ra)
	}
	if !strings.Contains(e.Message, `"alice" is over 0.5 requests a second (burst 3)`) || strings.Contains(e.Message, teamToken) {
		t.Errorf("429 message %q: want the principal and the rate, never the token", e.Message)
	}
	r := do(t, h, http.MethodGet, "/", teamToken) // the page shares the token's bucket
	if r.Code != http.StatusTooManyRequests || r.Header().Get("Retry-After") == "" || !strings.HasPrefix(r.Body.String(), "429 too many requests: ") {
		t.Errorf("page over the rate: %d %q %q", r.Code, r.Header().Get("Retry-After"), r.Body)
	}
	if w := do(t, h, http.MethodGet, "/api/v1/status", userToken); w.Code != http.StatusOK {
		t.Errorf("another token is limited by alice's requests: %d", w.Code)
	}
	for range 5 {
		if w := do(t, h, http.MethodGet, "/api/v1/status", "unknown"); w.Code != http.StatusUnauthorized {
			t.Fatalf("unknown token: %d, want 401", w.Code)
		}
	}

	off := New(Options{Backend: b, Kube: fake.NewClientset(), Tokens: testTokens, Registry: prometheus.NewRegistry(), RateLimit: -1})
	for i := range 500 {
		if w := do(t, off, http.MethodGet, "/api/v1/status", teamToken); w.Code != http.StatusOK {
			t.Fatalf("no limit: request %d: %d", i+1, w.Code)
		}
	}
}

// TestLimiterRefills: a refused request is not counted, and the bucket refills at the rate; the
// defaults apply to a zero limit.
func TestLimiterRefills(t *testing.T) {
	l := newLimiter(2, 2)
	now := time.Unix(1000, 0)
	for i := range 2 {
		if d := l.wait("tok", now); d != 0 {
			t.Fatalf("request %d of the burst waits %s", i+1, d)
		}
	}
	for range 3 { // refused requests take nothing from the bucket
		if d := l.wait("tok", now); d != 500*time.Millisecond {
			t.Fatalf("over the burst: wait %s, want 500ms", d)
		}
	}
	if d := l.wait("tok", now.Add(500*time.Millisecond)); d != 0 {
		t.Fatalf("after 500ms at 2 a second: wait %s, want 0", d)
	}
	if d := l.wait("other", now); d != 0 {
		t.Fatalf("another token waits %s", d)
	}
	if def := newLimiter(0, 0); def.limit != DefaultRateLimit || def.burst != DefaultRateBurst {
		t.Errorf("zero limit: %v/%d, want the defaults", def.limit, def.burst)
	}
	if newLimiter(-1, 0) != nil {
		t.Error("a negative limit limits")
	}
}

// TestLimiterKeepsNoBucketOfAnUnknownToken: a client that sends thousands of distinct made-up
// tokens, as a bearer token or as the page's Basic password, gets 401 for each and leaves no
// bucket behind (the limiter's map would otherwise grow with every guess); the buckets of
// tokens that are full again (rotated away) are forgotten once there are maxIdleLimiters.
func TestLimiterKeepsNoBucketOfAnUnknownToken(t *testing.T) {
	s, h := newServer(Options{Backend: &fakeBackend{}, Kube: fake.NewClientset(), Tokens: testTokens, Registry: prometheus.NewRegistry(),
		RateLimit: 1, RateBurst: 1})
	for i := range 3000 {
		tok := fmt.Sprintf("guess-%d", i)
		if w := do(t, h, http.MethodGet, "/api/v1/status", tok); w.Code != http.StatusUnauthorized {
			t.Fatalf("made-up token %d: %d, want 401", i, w.Code)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.SetBasicAuth("x", tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("made-up page password %d: %d, want 401", i, w.Code)
		}
	}
	if n := len(s.limiter.buckets); n != 0 {
		t.Fatalf("after 6,000 requests with made-up tokens the limiter holds %d buckets, want 0", n)
	}

	l := newLimiter(1, 1)
	now := time.Unix(1000, 0)
	for i := range maxIdleLimiters {
		l.wait(fmt.Sprintf("old-%d", i), now)
	}
	if d := l.wait("new", now.Add(time.Minute)); d != 0 {
		t.Fatalf("a new token waits %s", d)
	}
	if n := len(l.buckets); n != 1 {
		t.Errorf("%d buckets after %d idle ones and a new token, want 1 (the idle ones forgotten)", n, maxIdleLimiters)
	}
}
