package httpapi

import (
	"crypto/sha256"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultRateLimit and DefaultRateBurst are how many requests a token may make, per second and
// at once, before the API answers 429 (Options.RateLimit, --api-qps and --api-burst): enough
// for a person, the web page's refresh and a CI pipeline that polls, and few enough that one
// token cannot take the daemon's cores from the sync loop.
const (
	DefaultRateLimit = 20
	DefaultRateBurst = 100
)

// maxIdleLimiters is how many tokens' buckets the limiter keeps before it forgets those that
// are full again (tokens rotated away).
const maxIdleLimiters = 1024

// limiter is a token bucket per bearer token (rate.Limiter), keyed by the token's SHA-256
// digest so that it keeps no token. Only known tokens reach it: their number bounds its map.
type limiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[[sha256.Size]byte]*rate.Limiter
}

// newLimiter returns the limiter of Options.RateLimit and RateBurst; nil (no limit) for a
// negative limit.
func newLimiter(limit float64, burst int) *limiter {
	if limit < 0 {
		return nil
	}
	if limit == 0 {
		limit = DefaultRateLimit
	}
	if burst <= 0 {
		burst = DefaultRateBurst
	}
	return &limiter{limit: rate.Limit(limit), burst: burst, buckets: map[[sha256.Size]byte]*rate.Limiter{}}
}

// wait is how long the token must wait for its next request: 0 when it may make it now (and
// it is counted), else the time until its bucket has a request again (and it is not counted).
func (l *limiter) wait(token string, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	key := sha256.Sum256([]byte(token))
	l.mu.Lock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxIdleLimiters {
			for k, other := range l.buckets {
				if other.TokensAt(now) >= float64(l.burst) {
					delete(l.buckets, k)
				}
			}
		}
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[key] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d > 0 {
		r.CancelAt(now)
	}
	return d
}

// overRate answers 429 with Retry-After (whole seconds, at least 1) when the token is over its
// rate, and reports whether it did; the page gets the answer as text, the API as JSON.
func (s *server) overRate(w http.ResponseWriter, token string, p Principal, page bool) bool {
	d := s.limiter.wait(token, time.Now())
	if d <= 0 {
		return false
	}
	secs := max(1, int(math.Ceil(d.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	msg := fmt.Sprintf("%q is over %g requests a second (burst %d); retry after %d s", p.Name, float64(s.limiter.limit), s.limiter.burst, secs)
	if page {
		writeText(w, http.StatusTooManyRequests, "429 too many requests: "+msg)
		return true
	}
	writeJSON(w, http.StatusTooManyRequests, errorf(http.StatusTooManyRequests, "%s", msg))
	return true
}
