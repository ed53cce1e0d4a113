package httpapi

import (
	"net/http"
	"time"
)

// MaxRequestBody is the largest request body that the API, the page and the probes accept;
// a larger one gets 413. Only the writes of jobs read a body, and they have MaxWriteBody; for
// the rest this keeps a client from making the server read and discard megabytes. Webhooks cap
// their own bodies (see Options.Webhooks).
const MaxRequestBody = 64 << 10

// limitBody answers 413 to a request whose declared body is larger than max, and cuts a body
// sent without a length (chunked) at max.
func limitBody(max int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestEntityTooLarge, errorf(http.StatusRequestEntityTooLarge,
				"request body over %d bytes", max))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		h.ServeHTTP(w, r)
	})
}

// Streaming exempts a handler that streams its response (a log follow, an event stream) from
// the HTTP server's read and write timeouts, which would otherwise cut it (the write timeout)
// or cancel its context (the read timeout) mid-stream. It lifts both deadlines of the
// connection for this request only; the handler must end when the request's context is done.
// Every other route stays under the server's timeouts: a route that streams must be wrapped.
func Streaming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		liftDeadlines(w)
		h.ServeHTTP(w, r)
	})
}

// liftDeadlines lifts the read and write deadlines of the request's connection, as Streaming
// does, for a handler that streams only some of its answers.
func liftDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})  // not supported: the server has no deadlines to lift
	_ = rc.SetWriteDeadline(time.Time{}) // ditto
}
