package git

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/sources"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// logBuffer collects the records of a text logger, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// hangingRemote is a Git remote served over HTTP that, once hang is set, accepts every request
// and never answers it, until the test ends.
func hangingRemote(t *testing.T) (*gittest.Remote, *atomic.Bool) {
	var hang atomic.Bool
	release := make(chan struct{})
	r := gittest.New(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if hang.Load() {
				select {
				case <-release:
				case <-req.Context().Done():
				}
				return
			}
			h.ServeHTTP(w, req)
		})
	})
	t.Cleanup(func() { close(release) }) // before gittest's Srv.Close, which waits for handlers
	return r, &hang
}

// TestFetchTimesOutOnAServerThatNeverAnswers (issue 32, finding 4): a Git server that accepts
// the connection and never answers fails a Fetch after Options.Timeout with "no answer within",
// naming the URL without its credentials, logged; the last good revision and its files stay.
// So it does for a Commit, whose push would hold Fetch, and for a poll, which logs it.
func TestFetchTimesOutOnAServerThatNeverAnswers(t *testing.T) {
	const timeout = 300 * time.Millisecond
	r, hang := hangingRemote(t)
	good := r.Commit("good", map[string]string{"a.yaml": "a: 1\n"})
	var log logBuffer
	withCreds := strings.Replace(r.URL, "http://", "http://alice:s3cret@", 1)
	s := newSourceT(t, Options{URL: withCreds, Ref: "main", Timeout: timeout, Log: slog.New(slog.NewTextHandler(&log, nil))})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	r.Commit("unseen", map[string]string{"a.yaml": "a: 2\n"})
	hang.Store(true)

	began := time.Now()
	rev, err := s.Fetch(ctx)
	took := time.Since(began)
	if want := "git: fetch " + r.URL + ": no answer within 300ms"; err == nil || err.Error() != want {
		t.Fatalf("Fetch from a server that never answers = %v, want %q", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error %v is no context.DeadlineExceeded", err)
	}
	if took > timeout+2*time.Second {
		t.Errorf("Fetch took %s, want about the timeout %s", took, timeout)
	}
	if rev.ID != good || readFile(t, rev.Dir, "a.yaml") != "a: 1\n" {
		t.Errorf("Fetch returned %s, want the last good %s with its files", rev.ID, good)
	}
	if got := log.String(); !strings.Contains(got, `msg="fetch failed"`) || !strings.Contains(got, "no answer within 300ms") {
		t.Errorf("the failed fetch is not logged: %q", got)
	}

	var calls atomic.Int64
	began = time.Now()
	_, err = s.Commit(ctx, ada, edits(t, &calls, "", map[string]string{"b.yaml": "b: 1\n"}))
	var pe *sources.PushError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "no answer within 300ms") || time.Since(began) > timeout+2*time.Second {
		t.Errorf("Commit to a server that never answers = %v after %s, want a PushError: no answer within 300ms", err, time.Since(began))
	}

	// The poller's ls-remote: cut by the same timeout and logged.
	newSourceT(t, Options{URL: r.URL, Ref: "main", Interval: 50 * time.Millisecond, Timeout: timeout, Log: slog.New(slog.NewTextHandler(&log, nil))})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(log.String(), `msg="poll failed"`) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := log.String(); !strings.Contains(got, `msg="poll failed"`) || strings.Contains(got, "s3cret") {
		t.Errorf("a poll of a server that never answers is not logged, or the log shows the password: %q", got)
	}
}
