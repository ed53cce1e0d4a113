package testcluster

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// CountRequests returns a transport wrapper for rest.Config.Wrap that adds to n each request
// that match accepts (nil: every request), e.g. to check that a path makes no request to the
// API server.
func CountRequests(n *atomic.Int64, match func(*http.Request) bool) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if match == nil || match(r) {
				n.Add(1)
			}
			return next.RoundTrip(r)
		})
	}
}

// GetOf matches the GETs of one object for CountRequests: resource is the plural of its kind
// ("configmaps"), name its name.
func GetOf(resource, name string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+resource+"/"+name)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
