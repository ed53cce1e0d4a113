package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// counter counts the requests that pass through a rest.Config (cfg.Wrap(counter.wrap)): every
// request, reads (GET, HEAD), watches, writes (every other method) and dry-runs (writes whose
// query says dryRun=All, which change nothing and are not counted as writes).
type counter struct {
	requests, reads, watches, writes, dryRuns, bytes atomic.Int64

	mu     sync.Mutex
	recent []string // the last recentMax requests, "METHOD path?query"
}

// recentMax is how many of the latest requests a counter remembers.
const recentMax = 32

// recentSince returns the requests made since the snapshot before (which had n requests), if
// they are few enough to be remembered.
func (c *counter) recentSince(n int64) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.requests.Load() - n
	if k <= 0 || k > int64(len(c.recent)) {
		return nil
	}
	return slices.Clone(c.recent[len(c.recent)-int(k):])
}

// Counts is a snapshot of a counter, or the difference of two.
type Counts struct {
	Requests int64 `json:"requests"`
	Reads    int64 `json:"reads"`
	Watches  int64 `json:"watches"`
	Writes   int64 `json:"writes"`
	DryRuns  int64 `json:"dryRuns"`
	// Bytes is the size of the response bodies read (after decompression).
	Bytes int64 `json:"responseBytes"`
}

func (c *counter) snapshot() Counts {
	return Counts{Requests: c.requests.Load(), Reads: c.reads.Load(), Watches: c.watches.Load(),
		Writes: c.writes.Load(), DryRuns: c.dryRuns.Load(), Bytes: c.bytes.Load()}
}

func (a Counts) minus(b Counts) Counts {
	return Counts{Requests: a.Requests - b.Requests, Reads: a.Reads - b.Reads, Watches: a.Watches - b.Watches,
		Writes: a.Writes - b.Writes, DryRuns: a.DryRuns - b.DryRuns, Bytes: a.Bytes - b.Bytes}
}

// count classifies one request by method and URL.
func (c *counter) count(method, rawQuery string) {
	c.requests.Add(1)
	switch {
	case method == http.MethodGet && strings.Contains(rawQuery, "watch=true"):
		c.watches.Add(1)
	case method == http.MethodGet || method == http.MethodHead:
		c.reads.Add(1)
	case strings.Contains(rawQuery, "dryRun=All"):
		c.dryRuns.Add(1)
	default:
		c.writes.Add(1)
	}
}

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.count(r.Method, r.URL.RawQuery)
		line := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			line += "?" + r.URL.RawQuery
		}
		if len(c.recent) == recentMax {
			c.recent = c.recent[1:]
		}
		c.recent = append(c.recent, line)
		c.mu.Unlock()
		resp, err := rt.RoundTrip(r)
		if err == nil && resp.Body != nil {
			resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
		}
		return resp, err
	})
}

// countingBody counts the bytes read from a response body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
