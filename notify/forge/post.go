package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// maxExcerpt is how much of an error response is quoted in the log.
const maxExcerpt = 200

// outcome is what posting a status came to.
type outcome struct {
	err        error         // nil: posted
	retry      bool          // worth trying again: a network error, a 5xx, a rate limit
	retryAfter time.Duration // the forge's Retry-After, 0 when it gave none
}

// post sends p once.
func (r *Reporter) post(ctx context.Context, p *pending) outcome {
	req, err := r.request(ctx, p.sha, p.status)
	if err != nil {
		return outcome{err: errors.New(r.redact(err.Error()))}
	}
	resp, err := r.client.Do(req)
	if err != nil {
		// A *url.Error names the request's URL, which holds no token; redact all the same.
		return outcome{err: errors.New(r.redact(err.Error())), retry: true}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return outcome{}
	}
	o := outcome{err: fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, r.excerpt(body))}
	o.retryAfter = retryAfter(resp.Header, r.now())
	switch {
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests:
		o.retry = true
	case resp.StatusCode == http.StatusForbidden &&
		(resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0"):
		// GitHub's rate limits answer 403 as well as 429, with Retry-After or
		// x-ratelimit-remaining: 0 and x-ratelimit-reset.
		o.retry = true
		if o.retryAfter == 0 {
			o.retryAfter = rateLimitReset(resp.Header, r.now())
		}
	}
	return o
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date; 0 when absent or
// unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// rateLimitReset reads GitHub's x-ratelimit-reset (the reset's Unix time in seconds).
func rateLimitReset(h http.Header, now time.Time) time.Duration {
	s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		return 0
	}
	if d := time.Unix(s, 0).Sub(now); d > 0 {
		return d
	}
	return 0
}

// excerpt is the start of an error response for the log: one line, printable, cut at
// maxExcerpt, with the token blanked (a forge or a proxy may echo the request's headers).
func (r *Reporter) excerpt(body []byte) string {
	s := strings.Map(func(c rune) rune {
		if unicode.IsControl(c) || c == unicode.ReplacementChar {
			return ' '
		}
		return c
	}, string(body))
	s = r.redact(strings.TrimSpace(s))
	if runes := []rune(s); len(runes) > maxExcerpt {
		s = string(runes[:maxExcerpt]) + "…"
	}
	if s == "" {
		return "(no body)"
	}
	return s
}

// redact blanks the token in s: whole, and any run of 8 or more of its characters (a token
// cut by a length limit or a line break).
func (r *Reporter) redact(s string) string {
	s = strings.ReplaceAll(s, r.token, "[redacted]")
	const part = 8
	if len(r.token) > part {
		for i := 0; i+part <= len(r.token); i++ {
			if strings.Contains(s, r.token[i:i+part]) {
				s = strings.ReplaceAll(s, r.token[i:i+part], "[redacted]")
			}
		}
	}
	return s
}
