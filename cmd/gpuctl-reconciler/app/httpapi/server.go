package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/usage"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Backend is what the API asks of the daemon.
type Backend interface {
	// Status returns the daemon's record of its syncs.
	Status(ctx context.Context) (daemon.Status, error)
	// RequestSync asks the daemon to sync now and returns the request, which a status answers
	// (daemon.Status.Answers) once a sync that started after it has ended.
	RequestSync(ctx context.Context) (daemon.Request, error)
	// Plan computes, without writing, what a sync of the current revision would do.
	Plan(ctx context.Context) (*reconciler.Plan, error)
	// Drift returns the current drift report and the history of its changes, oldest first.
	Drift(ctx context.Context) (drift.Report, []drift.Entry, error)
}

// Options configure the handler that New builds. Only Kube and Tokens are needed for the
// cluster endpoints; Backend for status, sync and plan.
type Options struct {
	// Backend is the daemon. Without it, status, sync and plan answer 500.
	Backend Backend
	// Kube reads the cluster. Without it, jobs, pools, nodes and quotas answer 500.
	Kube kubernetes.Interface
	// Dynamic reads Kueue's Workloads and ClusterQueues (the jobs' queue state); without it
	// the jobs have none, except from Objects.
	Dynamic dynamic.Interface
	// Objects, when set, answers the read model's lists and gets instead of Kube and Dynamic
	// (the daemon gives its informers, cluster.InformerObjects); logs and watches are still
	// read with Kube and Dynamic.
	Objects cluster.Objects
	// Writer makes the writes of jobs (POST /api/v1/jobs, ...): the daemon. Without it they
	// answer 405.
	Writer Writer
	// SystemNamespace holds the pool registry (default keys.SystemNamespace).
	SystemNamespace string
	// Cluster is the name of the daemon's cluster (gpuctl-reconciler --cluster), which the
	// web page shows in its title and top bar; "" names none.
	Cluster string
	// Tokens resolves bearer tokens. Without it, every /api/v1 request answers 401.
	Tokens TokenSource
	// Registry is served at /metrics and receives the API's request metrics; nil means the
	// default Prometheus registry.
	Registry *prometheus.Registry
	// Webhooks are mounted as given (path or ServeMux pattern → handler), without bearer
	// authentication and without MaxRequestBody: each checks its own signature and caps its
	// own body. A path under /api/ is refused.
	Webhooks map[string]http.Handler
	// Ready reports whether the daemon is ready; nil means always ready.
	Ready func() error
	// RateLimit is how many requests a second each token may make to the API and the page, and
	// RateBurst how many at once; over it they answer 429 with Retry-After. 0 is
	// DefaultRateLimit (DefaultRateBurst); a negative RateLimit is no limit.
	RateLimit float64
	RateBurst int
	// Usage reads GPU utilization from Prometheus: GET /api/v1/jobs/{jobId}/metrics and the
	// page's charts. Without it they say there is no Prometheus.
	Usage *usage.Client
	// Log receives access and error logs; nil discards them.
	Log *slog.Logger
}

type server struct {
	opts    Options
	log     *slog.Logger
	metrics *apiMetrics
	cluster cluster.Model // nil without Options.Kube
	limiter *limiter      // nil: no rate limit
	// openapi is the document of GET /api/v1/openapi.json, written from the route table.
	openapi []byte
	// patterns are the ServeMux patterns registered, in order.
	patterns []string
	// poolUsage holds the web page's pool charts for every reader (ui_chart.go).
	poolUsage usageCache
}

// New returns the HTTP handler of gpuctl-reconciler (see the package documentation for the
// routes). It panics, as http.ServeMux does, when a webhook pattern is invalid, collides with a
// built-in route, or lies under /api/.
func New(opts Options) http.Handler {
	_, mux := newServer(opts)
	return mux
}

// newServer builds the server and its routes.
func newServer(opts Options) (*server, *http.ServeMux) {
	if opts.SystemNamespace == "" {
		opts.SystemNamespace = keys.SystemNamespace
	}
	s := &server{opts: opts, log: opts.Log, limiter: newLimiter(opts.RateLimit, opts.RateBurst)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Tokens == nil {
		s.log.Warn("httpapi: no token source; every /api/v1 request will be refused")
	}
	s.metrics = newAPIMetrics(opts.Registry)
	if opts.Kube != nil {
		s.cluster = &cluster.Reader{Client: opts.Kube, Dynamic: opts.Dynamic, Objects: opts.Objects, Namespace: opts.SystemNamespace, Log: s.log}
	}
	mux := http.NewServeMux()
	s.routes(mux)
	s.openapi = openAPI(s.table())
	return s, mux
}

var errNoKube = errors.New("the API has no Kubernetes client")

// model is the read model of the cluster as the caller of a request (its context) sees it:
// whole for a token that sees every namespace, else cluster.Scope of the token's namespaces
// (none without a caller). It is errNoKube (a 500) when the daemon gave no client.
func (s *server) model(ctx context.Context) (cluster.Model, error) {
	if s.cluster == nil {
		return nil, errNoKube
	}
	p, _ := PrincipalFrom(ctx)
	if p.SeesAll() {
		return s.cluster, nil
	}
	return cluster.Scope(s.cluster, p.Namespaces), nil
}

// handle registers a handler with request metrics, an access log and MaxRequestBody.
func (s *server) handle(mux *http.ServeMux, pattern string, h http.Handler) {
	s.handleLimit(mux, pattern, MaxRequestBody, h)
}

// handleLimit registers a handler with request metrics, an access log and a body limit.
func (s *server) handleLimit(mux *http.ServeMux, pattern string, max int64, h http.Handler) {
	s.handleRaw(mux, pattern, limitBody(max, h))
}

// handleRaw registers a handler with request metrics and an access log only.
func (s *server) handleRaw(mux *http.ServeMux, pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	mux.Handle(pattern, s.metrics.instrument(pattern, s.accessLog(h)))
}

// patternPath is the path of a ServeMux pattern "[METHOD ][HOST]/PATH".
func patternPath(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = strings.TrimLeft(pattern[i:], " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		return pattern[i:]
	}
	return pattern
}

func healthz(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") }

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	writeText(w, http.StatusOK, "ok")
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, msg)
}

func notFound(_ http.ResponseWriter, r *http.Request) error {
	return errorf(http.StatusNotFound, "no route for %s %s", r.Method, r.URL.Path)
}

// readOnly answers the writes of a job API (create, delete, label): gpuctl is GitOps.
func readOnly(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Allow", "GET, HEAD")
	return errorf(http.StatusMethodNotAllowed,
		"%s %s: the gpuctl API is read-only; gpuctl is GitOps: commit the file to Git instead "+
			"(POST /api/v1/sync applies the latest revision now)", r.Method, r.URL.Path)
}

// methodNotAllowed answers the methods of a path that it does not serve: readOnly for a path
// that only GET serves, else a 405 that lists the methods.
func methodNotAllowed(methods []string) apiFunc {
	if len(methods) == 1 && methods[0] == http.MethodGet {
		return readOnly
	}
	var allow []string
	for _, m := range methods {
		allow = append(allow, m)
		if m == http.MethodGet {
			allow = append(allow, http.MethodHead)
		}
	}
	list := strings.Join(allow, ", ")
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Allow", list)
		return errorf(http.StatusMethodNotAllowed, "%s %s: method not allowed; use %s", r.Method, r.URL.Path, list)
	}
}

// accessLog logs each request at debug level.
func (s *server) accessLog(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		s.log.Debug("http request", "method", r.Method, "path", r.URL.Path, "code", rec.code,
			"duration", time.Since(start), "remote", r.RemoteAddr)
	})
}

// statusRecorder remembers the status code that a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer (flush, deadlines).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
