package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/review"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Error is the JSON body of every error answer, e.g. {"error": "unknown job alice.sft", "code": 404}.
type Error struct {
	Message string `json:"error"`
	Code    int    `json:"code"`
	// ErrorDetail carries the read model's typed error when the answer is one ("notFound",
	// "ambiguous", "filter", "noLogs"), so that a client (gpuctl --server) gives its callers
	// the same error.
	cluster.ErrorDetail
	// Diagnostics are every error of the files of a write that are invalid (400), each with
	// its file (the request's field: yamlContent, yamlContents[1]), line, column and field.
	Diagnostics []*render.Diagnostic `json:"diagnostics,omitempty"`
	// Violations are the violations of the review's policy and quota checks that refuse a
	// write to the branch that applies (400), as `gpuctl diff --base -o json` lists them.
	Violations []*review.Violation `json:"violations,omitempty"`
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// errorf builds an Error with an HTTP status code.
func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// apiFunc is a handler that writes its own success answer and returns its failure.
type apiFunc func(w http.ResponseWriter, r *http.Request) error

// api turns an apiFunc into a handler: an *Error keeps its code, an unknown job, pool, node,
// user or pod (cluster.NotFoundError), a job without a started container (cluster.NoLogsError)
// or a Kubernetes NotFound becomes 404, an ambiguous job name or a refused filter
// (cluster.AmbiguousError, cluster.FilterError) 400, anything else is a 500 that is also
// logged.
func (s *server) api(h apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	}
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := asError(err)
	if e.Code == http.StatusInternalServerError && !errors.As(err, new(*Error)) {
		s.log.Error("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, e.Code, e)
}

// asError is err as an answer, with the status code that api describes.
func asError(err error) *Error {
	var e *Error
	detail, typed := cluster.DetailOf(err)
	switch {
	case errors.As(err, &e):
		return e
	case typed && detail.Unknown():
		return &Error{Code: http.StatusNotFound, Message: err.Error(), ErrorDetail: detail}
	case typed:
		return &Error{Code: http.StatusBadRequest, Message: err.Error(), ErrorDetail: detail}
	case apierrors.IsNotFound(err):
		return &Error{Code: http.StatusNotFound, Message: err.Error()}
	}
	return &Error{Code: http.StatusInternalServerError, Message: err.Error()}
}

// writeJSON writes v as the JSON body of an answer with the status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	startJSON(w, code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to tell it
}

// startJSON writes the headers of a JSON answer; the body follows.
func startJSON(w http.ResponseWriter, code int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
}

// Paging defaults and limits of list endpoints: page 1, pageSize 20.
const (
	defaultPageSize = 20
	maxPageSize     = 500
	maxPage         = 1_000_000
)

// parsePage reads page and pageSize from a query; a bad value is a 400.
func parsePage(q url.Values) (cluster.Page, error) {
	p := cluster.Page{Number: 1, Size: defaultPageSize}
	var err error
	if p.Number, err = intParam(q, "page", 1, 1, maxPage); err != nil {
		return p, err
	}
	if p.Size, err = intParam(q, "pageSize", defaultPageSize, 1, maxPageSize); err != nil {
		return p, err
	}
	return p, nil
}

func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	if !q.Has(name) {
		return def, nil
	}
	n, err := strconv.Atoi(q.Get(name))
	if err != nil || n < lo || n > hi {
		return 0, errorf(http.StatusBadRequest, "%s: want an integer from %d to %d, got %q", name, lo, hi, q.Get(name))
	}
	return n, nil
}
