package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/usage"
)

// remoteModel is cluster.Model over the daemon's API (gpuctl --server): each method is one GET
// of /api/v1, decoded into the read model's types, and the API's errors become the read model's
// typed errors again, so the read verbs print the same answers and exit with the same codes
// either way. The token goes in the Authorization header only, never into an error.
type remoteModel struct {
	// base is the server's URL, e.g. https://gpuctl.example.com (a path prefix is kept).
	base   *url.URL
	token  string
	client *http.Client
}

var _ cluster.Model = (*remoteModel)(nil)

// newRemoteModel is the model of the daemon at server (an http or https URL).
func newRemoteModel(server, token string) (*remoteModel, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q: want an http:// or https:// URL", usage.RedactURL(server))
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/"
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return &remoteModel{base: u, token: token, client: &http.Client{Transport: http.DefaultTransport}}, nil
}

// The methods of cluster.Model, one entry each: the route and its query.

// Jobs lists the jobs of the filter: GET jobs, every page when the filter asks for all.
func (m *remoteModel) Jobs(ctx context.Context, f cluster.JobFilter) (cluster.JobList, error) {
	l, err := pages[cluster.JobSummary](ctx, m, "jobs", query("kind", f.Kind, "pool", f.Pool, "status", f.Status), f.Page)
	return cluster.JobList(l), err
}

// Job reads one job: GET jobs/{jobId}.
func (m *remoteModel) Job(ctx context.Context, id string) (cluster.JobDetail, error) {
	return getJSON[cluster.JobDetail](ctx, m, "jobs/"+url.PathEscape(id), nil)
}

// Pools lists the pools: GET pools.
func (m *remoteModel) Pools(ctx context.Context) (cluster.PoolList, error) {
	return getJSON[cluster.PoolList](ctx, m, "pools", nil)
}

// Pool reads one pool: GET pools/{name}.
func (m *remoteModel) Pool(ctx context.Context, name string) (cluster.PoolDetail, error) {
	return getJSON[cluster.PoolDetail](ctx, m, "pools/"+url.PathEscape(name), nil)
}

// Nodes lists the nodes of the filter: GET nodes, every page when the filter asks for all.
func (m *remoteModel) Nodes(ctx context.Context, f cluster.NodeFilter) (cluster.NodeList, error) {
	l, err := pages[cluster.NodeSummary](ctx, m, "nodes", query("pool", f.Pool, "gpuType", f.GPUType, "status", f.Status), f.Page)
	return cluster.NodeList(l), err
}

// Node reads one node: GET nodes/{name}.
func (m *remoteModel) Node(ctx context.Context, name string) (cluster.NodeDetail, error) {
	return getJSON[cluster.NodeDetail](ctx, m, "nodes/"+url.PathEscape(name), nil)
}

// Quotas lists the quotas: GET quotas.
func (m *remoteModel) Quotas(ctx context.Context) (cluster.QuotaList, error) {
	return getJSON[cluster.QuotaList](ctx, m, "quotas", nil)
}

// Quota reads a user's quota: GET quotas/{user}.
func (m *remoteModel) Quota(ctx context.Context, user string) (cluster.Quota, error) {
	return getJSON[cluster.Quota](ctx, m, "quotas/"+url.PathEscape(user), nil)
}

// JobEvents reads a job's events: GET jobs/{jobId}/events.
func (m *remoteModel) JobEvents(ctx context.Context, id string) (cluster.EventList, error) {
	return getJSON[cluster.EventList](ctx, m, "jobs/"+url.PathEscape(id)+"/events", nil)
}

// Events reads the events of every job of a namespace ("" for all): GET events.
func (m *remoteModel) Events(ctx context.Context, namespace string) (cluster.EventList, error) {
	return getJSON[cluster.EventList](ctx, m, "events", query("namespace", namespace))
}

// JobPods lists the rows of gpuctl get jobs: GET jobpods.
func (m *remoteModel) JobPods(ctx context.Context, f cluster.JobPodFilter) (cluster.JobPodList, error) {
	return getJSON[cluster.JobPodList](ctx, m, "jobpods", query("namespace", f.Namespace, "kind", f.Kind,
		"pool", f.Pool, "status", f.Status, "selector", f.Selector))
}

// remoteWatchInterval is how often WatchJobPods asks the daemon again.
const remoteWatchInterval = 2 * time.Second

// WatchJobPods calls emit with the rows at once and again each time they differ, asking the
// daemon every remoteWatchInterval (it answers from its informers), until ctx ends.
func (m *remoteModel) WatchJobPods(ctx context.Context, f cluster.JobPodFilter, emit func(cluster.JobPodList) error) error {
	var last []byte
	for {
		list, err := m.JobPods(ctx, f)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if b, _ := json.Marshal(list); !bytes.Equal(b, last) {
			last = b
			if err := emit(list); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(remoteWatchInterval):
		}
	}
}

// JobDescription reads what describe job shows: GET jobs/{jobId}/description.
func (m *remoteModel) JobDescription(ctx context.Context, id string) (cluster.JobDescription, error) {
	return getJSON[cluster.JobDescription](ctx, m, "jobs/"+url.PathEscape(id)+"/description", nil)
}

// Logs streams a job's log lines: GET jobs/{jobId}/logs, as JSON lines (one cluster.LogLine each) until the answer ends or,
// when following, until ctx ends.
func (m *remoteModel) Logs(ctx context.Context, id string, opts cluster.LogOptions, emit func(cluster.LogLine) error) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	q := query("grep", opts.Grep, "pod", opts.Pod)
	q.Set("tail", strconv.FormatInt(max(opts.Tail, -1), 10))
	if opts.Since > 0 {
		q.Set("since", opts.Since.String())
	}
	for name, on := range map[string]bool{"follow": opts.Follow, "previous": opts.Previous, "allPods": opts.AllPods} {
		if on {
			q.Set(name, "true")
		}
	}
	resp, err := m.get(ctx, "jobs/"+url.PathEscape(id)+"/logs", q, mediaNDJSON)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var l cluster.LogLine
			if jerr := json.Unmarshal(line, &l); jerr != nil {
				return fmt.Errorf("%s: log line: %w", m.where(), jerr)
			}
			if eerr := emit(l); eerr != nil {
				return eerr
			}
		}
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			return nil // the end of the log, or the caller stopped following
		}
		if err != nil {
			return fmt.Errorf("%s: read log: %w", m.where(), err)
		}
	}
}

// mediaNDJSON asks the logs route for one JSON object a line.
const mediaNDJSON = "application/x-ndjson"

// apiPageSize is the largest page the API serves: a list of every item is read in pages of it.
const apiPageSize = 500

// pagedList is the JSON of a paged list of the API (cluster.JobList, cluster.NodeList).
type pagedList[I any] struct {
	Total    int `json:"total"`
	Page     int `json:"page"`
	PageSize int `json:"pageSize"`
	Items    []I `json:"items"`
}

// pages reads the page of a list as cluster.Reader pages it: one page of the API when it
// serves that size, else every page, cut here (the zero Page is every item).
func pages[I any](ctx context.Context, m *remoteModel, path string, q url.Values, p cluster.Page) (pagedList[I], error) {
	number := max(p.Number, 1)
	if p.Size > 0 && p.Size <= apiPageSize {
		q.Set("page", strconv.Itoa(number))
		q.Set("pageSize", strconv.Itoa(p.Size))
		return getJSON[pagedList[I]](ctx, m, path, q)
	}
	all := pagedList[I]{Page: number, PageSize: p.Size, Items: []I{}}
	q.Set("pageSize", strconv.Itoa(apiPageSize))
	for n := 1; ; n++ {
		q.Set("page", strconv.Itoa(n))
		l, err := getJSON[pagedList[I]](ctx, m, path, q)
		if err != nil {
			return pagedList[I]{}, err
		}
		all.Total = l.Total
		all.Items = append(all.Items, l.Items...)
		if len(l.Items) < apiPageSize || len(all.Items) >= l.Total {
			break
		}
	}
	if p.Size > 0 {
		start := min((number-1)*p.Size, len(all.Items))
		all.Items = all.Items[start:min(start+p.Size, len(all.Items))]
	}
	return all, nil
}

// query is the query of name-value pairs, without the empty values.
func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// getJSON GETs a route of /api/v1 and decodes its JSON answer.
func getJSON[T any](ctx context.Context, m *remoteModel, path string, q url.Values) (T, error) {
	return sendJSON[T](ctx, m, http.MethodGet, path, q, http.StatusOK)
}

// sendJSON sends a request without a body to a route of /api/v1 and decodes the JSON of its
// answer of the code wanted.
func sendJSON[T any](ctx context.Context, m *remoteModel, method, path string, q url.Values, want int) (T, error) {
	var v T
	resp, err := m.send(ctx, method, path, q, "application/json", want)
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return v, fmt.Errorf("%s: decode %s: %w", m.where(), path, err)
	}
	return v, nil
}

// get sends a GET with the token and returns a 200 answer; any other answer is its error.
func (m *remoteModel) get(ctx context.Context, path string, q url.Values, accept string) (*http.Response, error) {
	return m.send(ctx, http.MethodGet, path, q, accept, http.StatusOK)
}

// send sends a request without a body with the token and returns the answer of the code
// wanted; any other answer is its error.
func (m *remoteModel) send(ctx context.Context, method, path string, q url.Values, accept string, want int) (*http.Response, error) {
	u := m.base.JoinPath(path)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", kube.UserAgent("gpuctl"))
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.where(), errors.Unwrap(err)) // *url.Error names the URL; say it once
	}
	if resp.StatusCode == want {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, m.answerError(resp)
}

// apiError is the JSON of an error answer of the API: its message, and the read model's typed
// error when it is one.
type apiError struct {
	Message string `json:"error"`
	cluster.ErrorDetail
}

// answerError turns an error answer into the read model's typed error that it carries, else
// into an error with the server, the code and the message.
func (m *remoteModel) answerError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e apiError
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
	}
	if err := e.Err(); err != nil {
		return err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%s: the token was refused (%s): check --token, $GPUCTL_TOKEN or %s", m.where(), e.Message, configHint)
	}
	return &httpError{Code: resp.StatusCode, Err: fmt.Errorf("%s: %s: %s", m.where(), resp.Status, e.Message)}
}

// httpError is an error answer of the API that is none of the read model's typed errors:
// its status code, for a caller that says more about one (a 403 of POST sync).
type httpError struct {
	Code int
	Err  error
}

// Error returns the server, the status and the API's message.
func (e *httpError) Error() string { return e.Err.Error() }

// where names the server in errors.
func (m *remoteModel) where() string { return "server " + m.base.Scheme + "://" + m.base.Host }

// RemoteModel is the read model of the daemon's API at server (an http or https URL) with a
// token, as gpuctl --server reads it; test/e2e compares it with cluster.Reader.
func RemoteModel(server, token string) (cluster.Model, error) {
	m, err := newRemoteModel(server, token)
	if err != nil {
		return nil, err
	}
	return m, nil
}
