package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/usage"
)

// The route table: every route of the server, with what GET /api/v1/openapi.json says of it.
// routes registers the table and the fallbacks (a 405 for the other methods of a path, JSON
// 404s), and openAPI writes the document from the same table, so the two cannot drift.

// access is who may call a route.
type access int

const (
	// public routes need no token (probes, metrics, webhooks).
	public access = iota
	// bearer routes need a known token ("Authorization: Bearer <token>").
	bearer
	// seesAll routes need a token that sees every namespace (admin or namespaces=*).
	seesAll
	// admin routes need an admin token.
	admin
	// page routes take a token as a bearer token or as the password of HTTP Basic.
	page
)

// param is a query parameter of a route.
type param struct {
	name, typ, doc string
}

// answer is one answer of a route: its code, its media type and, for JSON, a value of its type.
type answer struct {
	code  int
	media string
	body  any
}

// Media types of the answers.
const (
	mediaJSON   = "application/json"
	mediaText   = "text/plain"
	mediaNDJSON = "application/x-ndjson"
	mediaHTML   = "text/html"
	mediaYAML   = "application/yaml"
)

// route is one route: its ServeMux pattern ("METHOD /path"), who may call it, what it does, its
// query, its answers and its handler (before authentication).
type route struct {
	pattern string
	access  access
	summary string
	query   []param
	answers []answer
	handler http.Handler
	// raw routes are registered without MaxRequestBody (webhooks cap their own bodies).
	raw bool
	// maxBody replaces MaxRequestBody (the writes' files).
	maxBody int64
	// request is a value of the type of the route's JSON body, for the document.
	request any
	// refused routes answer 405 whatever the request (writes of what only Git holds): they
	// are not among the methods a path allows.
	refused bool
}

func ok(body any) []answer { return []answer{{http.StatusOK, mediaJSON, body}} }

var pageQuery = []param{{"page", "integer", "page number, from 1 (default 1)"},
	{"pageSize", "integer", "items per page, from 1 to 500 (default 20)"}}

// table is every route of the server, but the fallbacks.
func (s *server) table() []route {
	text := []answer{{http.StatusOK, mediaText, nil}}
	rs := []route{
		{pattern: "GET /healthz", summary: "liveness: 200 ok", answers: text, handler: http.HandlerFunc(healthz)},
		{pattern: "GET /readyz", summary: "readiness: 200 ok, or 503 not ready: <reason>", answers: text, handler: http.HandlerFunc(s.readyz)},
		{pattern: "GET /metrics", summary: "Prometheus metrics", answers: text, handler: s.metricsHandler()},
	}
	for pattern, h := range s.opts.Webhooks {
		if strings.HasPrefix(patternPath(pattern), "/api/") {
			panic(fmt.Sprintf("httpapi: webhook %q: paths under /api/ need a bearer token", pattern))
		}
		rs = append(rs, route{pattern: pattern, summary: "Git webhook: checks its own signature, then asks for a sync",
			answers: []answer{{http.StatusAccepted, mediaText, nil}}, handler: h, raw: true})
	}
	webPage := []answer{{http.StatusOK, mediaHTML, nil}}
	rs = append(rs,
		route{pattern: "GET /{$}", access: page, summary: "the read-only web page", answers: webPage, handler: http.HandlerFunc(s.getPage)},
		route{pattern: "GET /index.html", access: page, summary: "the read-only web page", answers: webPage, handler: http.HandlerFunc(s.getPage)},
		route{pattern: "GET /jobs/{jobId}", access: page, summary: "the web page of one job: status, pods, events, last log lines", answers: webPage, handler: http.HandlerFunc(s.getJobPage)},
	)
	get := func(path string, acc access, summary string, query []param, answers []answer, h apiFunc) {
		rs = append(rs, route{pattern: "GET " + path, access: acc, summary: summary, query: query, answers: answers, handler: s.api(h)})
	}
	get("/api/v1/openapi.json", bearer, "this document (OpenAPI 3.1)", nil, ok(map[string]any{}), s.getOpenAPI)
	get("/api/v1/status", bearer, "the daemon's status: source, revision, result of the last sync", nil, ok(daemon.Status{}), s.getStatus)
	get("/api/v1/plan", seesAll, "what a sync of the current revision would change", nil, ok(PlanResponse{}), s.getPlan)
	get("/api/v1/drift", bearer, "the drift report (of the token's namespaces) with the history of the last since",
		[]param{{"since", "string", "a Go duration such as 24h (default) or 90m; 0 for the whole history"}}, ok(DriftResponse{}), s.getDrift)
	get("/api/v1/jobs", bearer, "the jobs (of the token's namespaces) that pass the filter",
		append([]param{{"kind", "string", "training, inference, notebook or compute"}, {"pool", "string", "a pool (default: the jobs in no pool)"},
			{"status", "string", "Pending, Running, Partially Running, Succeeded or Failed, in any case"}}, pageQuery...),
		ok(cluster.JobList{}), fromModel(s, listJobs))
	get("/api/v1/jobs/{jobId}", bearer, "one job: jobId is <namespace>.<name>, or a name one namespace has", nil,
		ok(cluster.JobDetail{}), fromModel(s, s.getJob))
	get("/api/v1/jobs/{jobId}/metrics", bearer, "a job's GPU utilization (%), GPU memory (GiB) and power (W) over a range, "+
		"per job and per pod, read from Prometheus (dcgm-exporter's series); 400 a bad parameter or more than 11,000 points, "+
		"404 unknown job, 502 Prometheus failed, 503 no Prometheus (--prometheus-url)",
		[]param{{"range", "string", "a Go duration back from endTime (default: the job's life, its last 24h at most)"},
			{"startTime", "string", "an RFC 3339 time, instead of range"}, {"endTime", "string", "an RFC 3339 time (default now)"},
			{"step", "string", "a Go duration between points (default: the range / 120, 15s at least)"},
			{"metric", "string", "only gpuUtilization, memoryUsage or power (default all)"}},
		ok(usage.Series{}), s.getJobMetrics)
	get("/api/v1/jobs/{jobId}/logs", bearer, "the log lines of a job's pods: text, or JSON lines with Accept: application/x-ndjson",
		[]param{{"tail", "integer", "the last lines of each container (default 100, -1 for all)"},
			{"since", "string", "only lines newer than this Go duration"}, {"grep", "string", "only lines that contain this"},
			{"pod", "string", "only this pod of the job"}, {"previous", "boolean", "each container's previous instance"},
			{"allPods", "boolean", "also the pods that a retry replaced"},
			{"follow", "boolean", "stream new lines until the client closes the connection"}},
		[]answer{{http.StatusOK, mediaText, nil}, {http.StatusOK, mediaNDJSON, cluster.LogLine{}}}, s.getLogs)
	get("/api/v1/jobs/{jobId}/events", bearer, "the events of a job's objects and pods, oldest first", nil,
		ok(cluster.EventList{}), fromModel(s, getEvents))
	get("/api/v1/jobs/{jobId}/description", bearer, "what gpuctl describe job shows: the job, its pods' rows, its last events, the applied revision and its drift items", nil,
		ok(cluster.JobDescription{}), fromModel(s, describeJob))
	get("/api/v1/jobpods", bearer, "the rows of gpuctl get jobs (of the token's namespaces): one per pod of each job, one for a job with no pod",
		[]param{{"namespace", "string", "only the jobs of this namespace"}, {"kind", "string", "training, inference, notebook or compute"},
			{"pool", "string", "only the jobs of this pool"}, {"status", "string", "a status word (Running, CrashLoopBackOff, ...) or a pod phase, in any case"},
			{"selector", "string", "a label selector on the jobs, as kubectl -l"}}, ok(cluster.JobPodList{}), fromModel(s, listJobPods))
	get("/api/v1/events", bearer, "the events of every job (of the token's namespaces), oldest first",
		[]param{{"namespace", "string", "only the jobs of this namespace"}}, ok(cluster.EventList{}), fromModel(s, listEvents))
	get("/api/v1/pools", bearer, "every pool (shared: the same for every token)", nil, ok(cluster.PoolList{}), fromModel(s, listPools))
	get("/api/v1/pools/{name}", bearer, "one pool with its unfinished jobs (of the token's namespaces)", nil,
		ok(cluster.PoolDetail{}), fromModel(s, getPool))
	get("/api/v1/nodes", bearer, "the nodes that pass the filter (shared)",
		append([]param{{"pool", "string", "a pool"}, {"gpuType", "string", "a GPU type, with or without the g8s.host/ prefix"},
			{"status", "string", "Ready or NotReady"}}, pageQuery...), ok(cluster.NodeList{}), fromModel(s, listNodes))
	get("/api/v1/nodes/{name}", bearer, "one node (shared)", nil, ok(cluster.NodeDetail{}), fromModel(s, getNode))
	get("/api/v1/quotas", bearer, "the quotas of the token's namespaces", nil, ok(cluster.QuotaList{}), fromModel(s, listQuotas))
	get("/api/v1/quotas/{user}", bearer, "the quota of a user (a namespace)", nil, ok(cluster.Quota{}), fromModel(s, getQuota))

	// The writes of jobs: each a commit that the daemon makes and pushes, then applies.
	write := func(pattern, summary string, request any, answers []answer, h apiFunc) {
		rs = append(rs, route{pattern: pattern, access: bearer, summary: summary, request: request, answers: answers,
			handler: s.api(s.writing(h)), maxBody: MaxWriteBody})
	}
	created, changed := []answer{{http.StatusCreated, mediaJSON, JobWriteResponse{}}}, ok(JobWriteResponse{})
	const writeCodes = "; 400 invalid files (every diagnostic) or request, 403 a namespace or directory not the token's, " +
		"404 unknown job, 405 writes off (a Git source without --git-push), 409 exists or unchanged, 503 the push failed (nothing written)"
	write("POST /api/v1/jobs", "create a job: the file (yamlContent, or an application/yaml body) committed to the directory of its namespace and pushed (201)"+writeCodes,
		CreateRequest{}, created, s.postJob)
	write("POST /api/v1/jobs/batch", "create the jobs of several files in one commit (201)"+writeCodes,
		BatchCreateRequest{}, []answer{{http.StatusCreated, mediaJSON, BatchResponse{}}}, s.postJobsBatch)
	write("DELETE /api/v1/jobs/{jobId}", "delete a job: its document removed from its file in a commit"+writeCodes, nil, changed, s.jobWrite(daemon.VerbDelete))
	write("POST /api/v1/jobs/{jobId}/pause", "pause a job in a commit: a training job.suspend: true, a service 0 replicas"+writeCodes, nil, changed, s.jobWrite(daemon.VerbPause))
	write("POST /api/v1/jobs/{jobId}/resume", "resume a paused job in a commit"+writeCodes, nil, changed, s.jobWrite(daemon.VerbResume))
	write("POST /api/v1/jobs/{jobId}/scale", "set the replicas of an inference, compute or notebook service in a commit"+writeCodes,
		ScaleRequest{}, changed, s.jobWrite(daemon.VerbScale))

	// Node label writes: node labels come from pool files in Git.
	refused := []answer{{http.StatusMethodNotAllowed, mediaJSON, Error{}}}
	for _, path := range []string{"/api/v1/nodes/{name}/labels", "/api/v1/nodes/{name}/labels/{key...}", "/api/v1/nodes/labels/batch"} {
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			rs = append(rs, route{pattern: method + " " + path, access: bearer, refused: true,
				summary: "refused (405): node labels come from pool files in Git", answers: refused, handler: s.api(readOnly)})
		}
	}
	rs = append(rs, route{pattern: "POST /api/v1/sync", access: admin, summary: "ask the daemon to sync now",
		answers: []answer{{http.StatusAccepted, mediaJSON, SyncResponse{}}}, handler: s.api(s.postSync)})
	return rs
}

// routes registers the table and the fallbacks: a 405 for the other methods of each path
// under /api/ (with the methods it allows), and JSON 404s elsewhere (after authentication
// under /api/).
func (s *server) routes(mux *http.ServeMux) {
	s.handle(mux, "/", s.api(notFound))
	allowed := map[string][]string{} // path → its methods, in table order
	var paths []string
	for _, rt := range s.table() {
		h := s.guard(rt.access, rt.handler)
		switch {
		case rt.raw:
			s.handleRaw(mux, rt.pattern, h)
		case rt.maxBody > 0:
			s.handleLimit(mux, rt.pattern, rt.maxBody, h)
		default:
			s.handle(mux, rt.pattern, h)
		}
		method, path, ok := strings.Cut(rt.pattern, " ")
		if !ok || !strings.HasPrefix(path, "/api/") || rt.refused {
			continue
		}
		if allowed[path] == nil {
			paths = append(paths, path)
		}
		allowed[path] = append(allowed[path], method)
	}
	for _, path := range paths {
		if !slices.ContainsFunc(paths, func(q string) bool { return q != path && matchesWildcards(q, path) }) {
			s.handle(mux, path, s.authenticate(s.api(methodNotAllowed(allowed[path]))))
		} // else: /api/v1/jobs/batch, whose other methods the fallback of /api/v1/jobs/{jobId} answers
	}
	s.handle(mux, "/api/", s.authenticate(s.api(notFound)))
}

// matchesWildcards reports whether the path of a pattern with {wildcards} (q) matches the
// path p segment by segment: a fallback on p would conflict with q's routes.
func matchesWildcards(q, p string) bool {
	qs, ps := strings.Split(q, "/"), strings.Split(p, "/")
	if len(qs) != len(ps) {
		return false
	}
	for i := range qs {
		if qs[i] != ps[i] && !(strings.HasPrefix(qs[i], "{") && !strings.HasSuffix(qs[i], "...}")) {
			return false
		}
	}
	return true
}

// guard wraps a handler in the authentication of its access.
func (s *server) guard(a access, h http.Handler) http.Handler {
	switch a {
	case bearer:
		return s.authenticate(h)
	case seesAll:
		return s.authenticate(s.requireSeesAll(h))
	case admin:
		return s.authenticate(s.requireAdmin(h))
	case page:
		return s.authenticatePage(h)
	}
	return h
}
