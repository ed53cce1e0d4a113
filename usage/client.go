package usage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// ErrNoPrometheus is the error of New without a URL: the metrics commands say it and exit 2.
var ErrNoPrometheus = errors.New("no Prometheus to read GPU metrics from: set --prometheus-url (or $GPUCTL_PROMETHEUS_URL) to the Prometheus that scrapes dcgm-exporter (docs/metrics.md)")

// DefaultTimeout bounds one query when Options.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Options say where Prometheus is and how to reach it.
type Options struct {
	// URL is Prometheus' base URL (http://prometheus.monitoring:9090; a path prefix is kept).
	URL string
	// BearerTokenFile, when set, is a file whose content is sent as a bearer token, read
	// once by New. The token is never printed.
	BearerTokenFile string
	// CAFile, when set, holds the PEM certificates that Prometheus' TLS certificate must
	// chain to (instead of the system's).
	CAFile string
	// Timeout bounds each query (DefaultTimeout when 0).
	Timeout time.Duration
	// Selector is label matchers that every series gpuctl reads must carry, the inside of a
	// PromQL selector's braces (job="dcgm-exporter"): the administrator's way to read only
	// the exporter's series. A Prometheus that also scrapes the teams' pods would otherwise
	// take a pod's own DCGM_FI_* series with exported_namespace="another-team" for that
	// team's GPUs (docs/metrics.md).
	Selector string
}

// Client queries Prometheus' HTTP API.
type Client struct {
	api      promv1.API
	url      string // redacted, for messages
	selector string // Options.Selector, checked
	timeout  time.Duration
	// now is the clock; tests move it.
	now func() time.Time
}

// New checks the options and returns a client; it sends nothing. Without a URL it returns
// ErrNoPrometheus.
func New(o Options) (*Client, error) {
	if strings.TrimSpace(o.URL) == "" {
		return nil, ErrNoPrometheus
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--prometheus-url %q: want http(s)://host[:port][/prefix]", RedactURL(o.URL))
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--prometheus-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--prometheus-ca-file %s: no PEM certificate in it", o.CAFile)
		}
		base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	selector, err := checkSelector(o.Selector)
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = base
	if o.BearerTokenFile != "" {
		b, err := os.ReadFile(o.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--prometheus-bearer-token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, fmt.Errorf("--prometheus-bearer-token-file %s is empty", o.BearerTokenFile)
		}
		rt = bearer{token: token, next: base}
	}
	c, err := promapi.NewClient(promapi.Config{Address: o.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url %s: %v", RedactURL(o.URL), err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{api: promv1.NewAPI(c), url: RedactURL(o.URL), selector: selector, timeout: timeout, now: time.Now}, nil
}

// URL is Prometheus' URL without its password, for messages.
func (c *Client) URL() string { return c.url }

// scoped is s with the client's selector.
func (c *Client) scoped(s Scope) Scope {
	s.selector = c.selector
	return s
}

// bearer adds a bearer token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// RedactURL is s with its password hidden ("(unparsable URL)" when it is none), for an
// error or a log that names a URL a user gave.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// query runs an instant query at t.
func (c *Client) query(ctx context.Context, q string, t time.Time) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, _, _, err := c.api.Query(ctx, q, t)
	if err != nil {
		return nil, c.wrap(err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus %s answered a %s to an instant query, want a vector", c.url, v.Type())
	}
	return vec, nil
}

// queryRange runs a range query.
func (c *Client) queryRange(ctx context.Context, q string, r promv1.Range) (model.Matrix, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, _, _, err := c.api.QueryRange(ctx, q, r)
	if err != nil {
		return nil, c.wrap(err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("prometheus %s answered a %s to a range query, want a matrix", c.url, v.Type())
	}
	return m, nil
}

// wrap names Prometheus in a query's error.
func (c *Client) wrap(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("prometheus %s did not answer within %s", c.url, c.timeout)
	}
	return fmt.Errorf("prometheus %s: %w", c.url, err)
}
