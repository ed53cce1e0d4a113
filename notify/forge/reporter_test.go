package forge

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/syncbuf"
)

// fast retries for tests.
var fast = RetryOptions{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, GiveUp: time.Minute}

// scripted answers each request with the next of codes (the last one repeated), recording
// each request's time and state.
type scripted struct {
	mu     sync.Mutex
	codes  []int
	header http.Header // sent with each answer that is not 2xx
	body   func(*http.Request) string
	times  []time.Time
	states []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var b struct{ State string }
	raw, _ := io.ReadAll(req.Body)
	_ = json.Unmarshal(raw, &b)
	s.mu.Lock()
	code := s.codes[min(len(s.times), len(s.codes)-1)]
	s.times = append(s.times, time.Now())
	s.states = append(s.states, b.State)
	s.mu.Unlock()
	if code >= 300 {
		for k, v := range s.header {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(code)
	if s.body != nil {
		_, _ = io.WriteString(w, s.body(req))
	}
}

// requests returns the states posted so far and when.
func (s *scripted) requests() ([]string, []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.states...), append([]time.Time(nil), s.times...)
}

func TestRetryThenPosted(t *testing.T) {
	srv := &scripted{codes: []int{503, 502, 201}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var logs syncbuf.Buffer
	r := startReporter(t, Options{Retry: fast, Log: slog.New(slog.NewTextHandler(&logs, nil))}, "https://github.com/a/b", hs)
	r.Report(testSHA, StateSuccess, "applied")
	flush(t, r)
	states, _ := srv.requests()
	if len(states) != 3 {
		t.Fatalf("%d requests, want 3 (503, 502, then 201)", len(states))
	}
	if !strings.Contains(logs.String(), "will retry") || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("log:\n%s\nwant two retries and no error", logs.String())
	}
}

func TestRetryAfter(t *testing.T) {
	srv := &scripted{codes: []int{429, 201}, header: http.Header{"Retry-After": {"1"}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	r := startReporter(t, Options{Retry: fast}, "https://github.com/a/b", hs)
	r.Report(testSHA, StateSuccess, "applied")
	flush(t, r)
	_, times := srv.requests()
	if len(times) != 2 {
		t.Fatalf("%d requests, want 2", len(times))
	}
	if gap := times[1].Sub(times[0]); gap < 900*time.Millisecond {
		t.Errorf("retried after %s, want the 1 s of Retry-After (the backoff alone is 5 ms)", gap)
	}
}

func TestClientErrorDroppedOnce(t *testing.T) {
	srv := &scripted{codes: []int{404}, body: func(*http.Request) string { return `{"message":"Not Found"}` }}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var logs syncbuf.Buffer
	r := startReporter(t, Options{Retry: fast, Log: slog.New(slog.NewTextHandler(&logs, nil))}, "https://github.com/a/b", hs)
	r.Report(testSHA, StateSuccess, "applied")
	flush(t, r)
	time.Sleep(50 * time.Millisecond) // ten backoffs: a retry would show
	if states, _ := srv.requests(); len(states) != 1 {
		t.Errorf("%d requests, want 1: a 404 is not retried", len(states))
	}
	if n := strings.Count(logs.String(), "commit status not posted"); n != 1 || !strings.Contains(logs.String(), "404 Not Found") || !strings.Contains(logs.String(), "Not Found") {
		t.Errorf("log:\n%s\nwant one line with the status and the forge's message", logs.String())
	}
}

func TestGiveUp(t *testing.T) {
	srv := &scripted{codes: []int{500}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var logs syncbuf.Buffer
	retry := RetryOptions{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond, GiveUp: 60 * time.Millisecond}
	r := startReporter(t, Options{Retry: retry, Log: slog.New(slog.NewTextHandler(&logs, nil))}, "https://github.com/a/b", hs)
	r.Report(testSHA, StateSuccess, "applied")
	flush(t, r)
	states, _ := srv.requests()
	if len(states) < 3 || !strings.Contains(logs.String(), "given up") {
		t.Errorf("%d requests, log:\n%s\nwant retries, then given up", len(states), logs.String())
	}
}

func TestHangingForgeDoesNotBlock(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var states []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var b struct{ State string }
		_ = json.NewDecoder(req.Body).Decode(&b)
		mu.Lock()
		states = append(states, b.State)
		mu.Unlock()
		<-release
		w.WriteHeader(http.StatusCreated)
	}))
	defer hs.Close()
	defer close(release)
	r := startReporter(t, Options{Retry: fast}, "https://github.com/a/b", hs)
	start := time.Now()
	for i := range 500 {
		r.Report(strings.Repeat(string(rune('a'+i%6)), 40), StateSuccess, "applied")
		r.Report(testSHA, []State{StatePending, StateSuccess, StateFailure}[i%3], "applied")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("1000 Reports took %s while the forge hangs", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Flush(ctx); err == nil {
		t.Error("Flush returned while the forge hangs")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) != 1 {
		t.Errorf("%d requests while the first hangs, want 1", len(states))
	}
}

func TestNewerStatusReplacesQueued(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var got []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var b struct{ State, Description string }
		_ = json.NewDecoder(req.Body).Decode(&b)
		mu.Lock()
		got = append(got, b.State+" "+b.Description)
		first := len(got) == 1
		mu.Unlock()
		if first {
			<-gate // the first post hangs while more statuses come
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer hs.Close()
	r := startReporter(t, Options{Retry: fast}, "https://github.com/a/b", hs)
	r.Report("1111111111111111111111111111111111111111", StatePending, "other commit")
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 })
	r.Report(testSHA, StatePending, "syncing")
	r.Report(testSHA, StateFailure, "failed: a.yaml:1: bad")
	r.Report(testSHA, StateSuccess, "applied: 1 created")
	close(gate)
	flush(t, r)
	mu.Lock()
	defer mu.Unlock()
	want := []string{"pending other commit", "success applied: 1 created"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("posted %q, want %q: the queued statuses of a commit replaced by the newest", got, want)
	}
}

func TestSameStatusPostedOnce(t *testing.T) {
	srv := &scripted{codes: []int{201}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	r := startReporter(t, Options{Retry: fast}, "https://gitlab.com/a/b", hs)
	for _, s := range []State{StateSuccess, StateSuccess, StateFailure, StateFailure, StateSuccess} {
		r.Report(testSHA, s, "the same words")
		flush(t, r)
	}
	states, _ := srv.requests()
	if strings.Join(states, " ") != "success failed success" {
		t.Errorf("posted %v, want success failed success: a repeated status is posted once", states)
	}
	// GitLab refuses a state the status already has ("Cannot transition status via :run
	// from :running"): new words alone are not posted there; elsewhere they are.
	for kind, want := range map[string]int{"https://gitlab.com/a/b": 2, "https://github.com/a/b": 4} {
		srv := &scripted{codes: []int{201}}
		hs := httptest.NewServer(srv)
		r := startReporter(t, Options{Retry: fast}, kind, hs)
		for _, d := range []string{"syncing", "syncing again"} {
			r.Report(testSHA, StatePending, d)
			flush(t, r)
		}
		r.Report(testSHA, StateFailure, "failed: a")
		flush(t, r)
		r.Report(testSHA, StateError, "failed: b")
		flush(t, r)
		if states, _ := srv.requests(); len(states) != want {
			t.Errorf("%s: posted %v, want %d posts", kind, states, want)
		}
		hs.Close()
	}
}

func TestTokenNeverLogged(t *testing.T) {
	const token = "ghp_S3cretT0kenValueQwErTyZxKjH"
	echo := func(req *http.Request) string {
		// A hostile or careless forge (or proxy) that echoes the request's headers.
		return `{"message":"Bad credentials","headers":{"Authorization":"` + req.Header.Get("Authorization") +
			`"},"cut":"` + token[3:20] + `"}`
	}
	for name, codes := range map[string][]int{"401 dropped": {401}, "500 retried": {500, 500, 401}} {
		t.Run(name, func(t *testing.T) {
			srv := &scripted{codes: codes, body: echo}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			var logs syncbuf.Buffer
			r := startReporter(t, Options{TokenFile: writeToken(t, token), Retry: fast,
				Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, "https://github.com/a/b", hs)
			r.Report(testSHA, StateFailure, "failed")
			flush(t, r)
			out := logs.String()
			if !strings.Contains(out, "Bad credentials") {
				t.Fatalf("log:\n%s\nwant the forge's message", out)
			}
			for i := 0; i+8 <= len(token); i++ {
				if strings.Contains(out, token[i:i+8]) {
					t.Fatalf("log holds part of the token (%q):\n%s", token[i:i+8], out)
				}
			}
		})
	}
	t.Run("network error", func(t *testing.T) {
		hs := httptest.NewServer(http.NotFoundHandler())
		hs.Close() // nothing listens
		var logs syncbuf.Buffer
		retry := RetryOptions{Initial: time.Millisecond, Max: time.Millisecond, GiveUp: 20 * time.Millisecond}
		r := startReporter(t, Options{TokenFile: writeToken(t, token), Retry: retry,
			Log: slog.New(slog.NewTextHandler(&logs, nil))}, "https://github.com/a/b", hs)
		r.Report(testSHA, StateSuccess, "applied")
		flush(t, r)
		if out := logs.String(); !strings.Contains(out, "given up") || strings.Contains(out, token) {
			t.Errorf("log:\n%s\nwant retries given up, without the token", out)
		}
	})
}

func TestNoRedirect(t *testing.T) {
	var followed bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		followed = true
		w.WriteHeader(http.StatusCreated)
	}))
	defer other.Close()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, other.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer hs.Close()
	var logs syncbuf.Buffer
	r := startReporter(t, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))}, "https://gitlab.com/a/b", hs)
	r.Report(testSHA, StateSuccess, "applied")
	flush(t, r)
	if followed || !strings.Contains(logs.String(), "307") {
		t.Errorf("followed %v, log:\n%s\nwant the redirect refused and logged (PRIVATE-TOKEN would travel)", followed, logs.String())
	}
}

func TestReportChecks(t *testing.T) {
	srv := &scripted{codes: []int{201}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var logs syncbuf.Buffer
	r := startReporter(t, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))}, "https://github.com/a/b", hs)
	r.Report("", StateSuccess, "no commit")
	r.Report(testSHA, State("done"), "unknown state")
	flush(t, r)
	if states, _ := srv.requests(); len(states) != 0 || strings.Count(logs.String(), "level=ERROR") != 2 {
		t.Errorf("%d requests, log:\n%s\nwant none, two errors", len(states), logs.String())
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 5 s")
}

func TestStoppedMidPostKeepsStatus(t *testing.T) {
	var calls atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body) // read: the server then sees the client hang up
		if calls.Add(1) == 1 {
			<-req.Context().Done() // the first post hangs until the client gives up
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer hs.Close()
	r, err := New(Options{APIURL: hs.URL, TokenFile: writeToken(t, "tok"), Retry: fast}, "https://github.com/a/b")
	if err != nil {
		t.Fatal(err)
	}
	r.Report(testSHA, StateSuccess, "applied")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	waitFor(t, func() bool { return calls.Load() == 1 })
	cancel()
	<-done
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go r.Run(ctx2)
	flush(t, r)
	if n := calls.Load(); n != 2 {
		t.Errorf("%d posts, want 2: a status cut by the end of Run is posted by the next", n)
	}
}
