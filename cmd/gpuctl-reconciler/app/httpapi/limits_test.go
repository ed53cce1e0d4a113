package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A body over MaxRequestBody is refused before the handler runs, declared or chunked.
func TestRequestBodyIsCapped(t *testing.T) {
	h, b := testServer(t)
	big := bytes.Repeat([]byte("x"), MaxRequestBody+1)
	r := httptest.NewRequest(http.MethodPost, "/api/v1/sync", bytes.NewReader(big))
	r.Header.Set("Authorization", "Bearer "+adminToken)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	wantError(t, w, http.StatusRequestEntityTooLarge)
	if b.syncs != 0 {
		t.Errorf("an oversized request reached the backend")
	}

	var seen error
	chunked := limitBody(MaxRequestBody, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, seen = io.ReadAll(r.Body)
	}))
	r = httptest.NewRequest(http.MethodPost, "/", io.MultiReader(bytes.NewReader(big))) // no length
	r.ContentLength = -1
	chunked.ServeHTTP(httptest.NewRecorder(), r)
	if _, ok := seen.(*http.MaxBytesError); !ok {
		t.Errorf("a chunked body over the cap read as %v, want *http.MaxBytesError", seen)
	}
}

// The server's write timeout cuts a slow response; Streaming lifts it for one route.
func TestStreamingLiftsTheWriteTimeout(t *testing.T) {
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 4 {
			_, _ = io.WriteString(w, strings.Repeat("x", 10)+"\n")
			_ = http.NewResponseController(w).Flush()
			if i < 3 {
				time.Sleep(150 * time.Millisecond)
			}
		}
	})
	mux := http.NewServeMux()
	mux.Handle("/stream", Streaming(slow))
	mux.Handle("/plain", slow)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.WriteTimeout, srv.Config.ReadTimeout = 200*time.Millisecond, 200*time.Millisecond
	srv.Start()
	defer srv.Close()
	for path, whole := range map[string]bool{"/stream": true, "/plain": false} {
		resp, err := srv.Client().Get(srv.URL + path)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if got := err == nil && len(body) == 44; got != whole {
			t.Errorf("%s: whole answer %v (%d bytes, %v), want %v", path, got, len(body), err, whole)
		}
	}
}
