package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// apiMetrics count and time the requests of each route.
type apiMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newAPIMetrics registers the request metrics with reg (nil: the default registerer). A second
// handler on the same registry shares the first one's collectors.
func newAPIMetrics(reg *prometheus.Registry) *apiMetrics {
	var r prometheus.Registerer = prometheus.DefaultRegisterer
	if reg != nil {
		r = reg
	}
	return &apiMetrics{
		requests: register(r, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuctl_api_requests_total",
			Help: "HTTP requests served by gpuctl-reconciler, by route pattern, method and status code.",
		}, []string{"route", "method", "code"})),
		duration: register(r, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gpuctl_api_request_duration_seconds",
			Help:    "Time to answer HTTP requests of gpuctl-reconciler, by route pattern and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"})),
	}
}

// register registers c, or returns the equal collector already registered.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) T {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("httpapi: register metrics: %v", err))
}

// instrument counts and times the requests of one route, labelled by its pattern (not by the
// path, which would make a series per job or node).
func (m *apiMetrics) instrument(route string, h http.Handler) http.Handler {
	labels := prometheus.Labels{"route": route}
	h = promhttp.InstrumentHandlerDuration(m.duration.MustCurryWith(labels), h)
	return promhttp.InstrumentHandlerCounter(m.requests.MustCurryWith(labels), h)
}

// metricsHandler serves the registry, or the default gatherer when there is none.
func (s *server) metricsHandler() http.Handler {
	if s.opts.Registry == nil {
		return promhttp.Handler()
	}
	return promhttp.HandlerFor(s.opts.Registry, promhttp.HandlerOpts{})
}
