// Package httpapi is the HTTP server of gpuctl-reconciler: health and readiness probes,
// Prometheus metrics, the Git webhooks, a REST API under /api/v1 that shows the daemon's status
// and plan and the gpuctl workloads, pools, nodes and quotas of the cluster, lets an admin ask
// for a sync and lets a token write its jobs as Git commits, and a web page. It is transport
// only: routing, query and body parsing, status codes, JSON errors, authentication and the
// page's rendering. What the cluster holds is read by package cluster (the read model), whose
// types are the answers of the jobs, pools, nodes and quotas routes; the daemon's status, plan
// and drift come from the Backend, and the writes are made by the Writer.
//
// gpuctl is GitOps: a job is a file in Git. The writes of the job API (seed 001 §7.2.1: POST
// /api/v1/jobs, POST /api/v1/jobs/batch, DELETE /api/v1/jobs/{jobId}, POST
// /api/v1/jobs/{jobId}/pause, resume and scale) are handed to the Writer (the daemon,
// daemon.Daemon.Write), which makes each the edit of the CLI's write verb (package edit) and
// commits and pushes it (a Git source with --git-push) or writes it (a directory source), then
// triggers the sync that applies it; they answer 405 without a Writer, or when the daemon
// takes no writes. The writer decides where a token may write (its namespaces' directories;
// an admin anywhere the namespace rules allow). Pools, quotas and node labels answer 405: they
// are the administrator's files.
//
// # Routes
//
//	GET  /healthz                    200 "ok"                                          no token
//	GET  /readyz                     200 "ok", or 503 "not ready: <reason>"            no token
//	GET  /metrics                    Prometheus text format                            no token
//	GET  /  (and /index.html)        the read-only web page (HTML)                     Bearer or Basic
//	GET  /jobs/{jobId}               a job's page (HTML): status, pods, events, logs   Bearer or Basic
//	*    <Options.Webhooks paths>    mounted as given; they check their own signatures no token
//	GET  /api/v1/openapi.json        the OpenAPI 3.1 document of every route (any token)
//	GET  /api/v1/status              daemon.Status
//	POST /api/v1/sync                202 {"requestId", "version"}; admin tokens only (else 403)
//	GET  /api/v1/plan                reconciler.Plan plus "summary"; tokens that see all namespaces
//	GET  /api/v1/drift               ?since=24h → drift.Report plus "summary"; "history" of since
//	GET  /api/v1/jobs                ?kind&pool&status&page&pageSize → cluster.JobList
//	GET  /api/v1/jobs/{jobId}        cluster.JobDetail
//	GET  /api/v1/jobs/{jobId}/logs   ?tail&since&grep&pod&previous&allPods&follow → text/plain lines
//	GET  /api/v1/jobs/{jobId}/events cluster.EventList
//	GET  /api/v1/events              ?namespace → cluster.EventList of every job
//	GET  /api/v1/pools               cluster.PoolList
//	GET  /api/v1/pools/{name}        cluster.PoolDetail
//	GET  /api/v1/nodes               ?pool&gpuType&status&page&pageSize → cluster.NodeList
//	GET  /api/v1/nodes/{name}        cluster.NodeDetail
//	GET  /api/v1/quotas              cluster.QuotaList
//	GET  /api/v1/quotas/{user}       cluster.Quota
//	POST /api/v1/jobs                CreateRequest (or an application/yaml body) → 201 JobWriteResponse
//	POST /api/v1/jobs/batch          BatchCreateRequest → 201 BatchResponse (one commit)
//	DELETE /api/v1/jobs/{jobId}      200 JobWriteResponse
//	POST /api/v1/jobs/{jobId}/pause  200 JobWriteResponse; also /resume, and /scale (ScaleRequest)
//
// The routes are one table (routes.go): the ServeMux registers it and GET /api/v1/openapi.json
// is written from it, with the schemas of the answers reflected from their Go types, so the
// document cannot drift from the handlers. The document needs a token like the rest of /api/.
//
// Every /api/v1 request needs "Authorization: Bearer <token>", resolved by a TokenSource such as
// StaticTokens (a kube-apiserver-style token file of lines "token,name[,admin]" or
// "token,name,namespaces=NS1;NS2"). An admin token, or one with namespaces=*, sees every
// namespace; any other sees the jobs, logs, events, quotas and drift of its namespaces only
// (none without namespaces=): the read model is cluster.Scope of them, so a job of another
// namespace is a 404 word for word like a job that does not exist, a bare name resolves among
// its namespaces only, and lists are cut before they are paged. Pools and nodes are shared and
// the same for every token (a pool's jobs are cut to the namespaces); the status is the
// daemon's, for every token; the plan, which names every namespace's objects, needs a token
// that sees all (else 403). Errors are JSON,
// {"error": "...", "code": N}, with the read model's typed error when it is one ("notFound",
// "ambiguous", "filter", "noLogs": the fields of cluster.NotFoundError, ...): 400 bad query (a cluster.FilterError, a bad page or pageSize) or
// ambiguous job name (cluster.AmbiguousError), 401 no or unknown token (with a
// WWW-Authenticate: Bearer header), 403 not an admin, 404 unknown job, pool, node, user
// (cluster.NotFoundError) or path, 405 a write the daemon does not make or a wrong method (with
// the path's methods in Allow), 500 the cluster or the daemon failed. The writes also answer
// 400 with every diagnostic of invalid files (Error.Diagnostics, file:line:col), 403 another
// namespace's directory or job, 409 a job or file that exists or a change that changes
// nothing, 413 a body over MaxWriteBody or a file over render.MaxFileSize, and 503 when the push
// failed (nothing was written). A token over its rate (Options.RateLimit and RateBurst, the
// API and the page together) gets 429 with Retry-After. The status comes from the Backend's
// memory (daemon.Daemon.Status): a read makes no request to the API server.
//
// The list routes page their answers: page from 1 (default 1), pageSize from 1 to 500 (default
// 20). The filters are cluster.JobFilter and cluster.NodeFilter: kind, pool and status (in any
// case, with or without a space, dash or underscore) of jobs; pool, gpuType (with or without
// the g8s.host/ prefix) and status (Ready or NotReady) of nodes.
//
// GET /api/v1/jobs/{jobId}/logs answers the log lines of the job's pods as plain text, one
// "[<prefix>] <line>" per line as gpuctl logs prints them (cluster.LogLine.Format): tail is the
// last lines of each container (default 100, -1 for all), since a Go duration, grep a
// substring, pod one pod of the job, previous the previous instance of each container and
// allPods the pods that a retry replaced too (see cluster.LogOptions). A job with no started
// container answers 404 (cluster.NoLogsError). With follow=true it answers 200 at once and
// streams chunked, each line flushed as it is written and the pods that start later picked
// up, until the client closes the connection; the server's read and write timeouts are
// lifted for that request. With "Accept: application/x-ndjson" each line is a cluster.LogLine
// in JSON instead (gpuctl --server asks for that). GET /api/v1/jobs/{jobId}/events answers the
// events of the job's objects and pods, oldest first; GET /api/v1/events those of every job
// (of ?namespace). GET /api/v1/jobs/{jobId}/metrics answers the job's GPU utilization, GPU
// memory and power over a range (usage.Series, from Prometheus: Options.Usage): ?range or
// ?startTime, ?endTime, ?step, ?metric; 503 without Prometheus, 502 when it fails.
//
// GET /api/v1/drift answers the daemon's drift report (drift.Report: where the cluster differs
// from Git, who changed it, shadow GPU workloads) with its summary line and, in "history", the
// changes of the last ?since= (a Go duration such as 24h or 90m; default 24h; 0 for the whole
// history), oldest first. The current items are always listed, however old.
//
// # Web page
//
// GET / is a read-only page for people: the sync status, the jobs (the first 200, by
// namespace and name, each linked to its page), the drift report with the last 24 h of its
// history, and bar charts of the GPUs requested against each team's quota and of the GPUs used
// in each pool (read through package cluster, as the API reads them); with Options.Usage, a
// chart per pool of its GPUs' utilization over 6 h, read once per 30 s for every reader. GET /jobs/{jobId} is a
// job's page: its status and facts (the Git file that declares it, GPUs, pool), its pods with
// why each is in its state (a waiting container's reason, the scheduler's message), its GPU
// utilization and memory over its life as SVG charts (with Options.Usage), its last 50
// events and the last 200 lines of its log (shared among its pods, read for at most 5 s); an
// unknown job is a 404 page, an ambiguous name a 400 page. The pages are rendered on the
// server (ui_html.go, with gomponents rather than html/template, whose executor would make the
// linker keep every exported method of the binary; no script, no external asset: they work
// offline), reload themselves every 30 s, and show a failed data source as an error in that
// section only. They need the same tokens as /api/v1; since a browser cannot send a bearer
// token, they also accept HTTP Basic authentication with any user name and a token as the
// password, and answer 401 with WWW-Authenticate: Basic realm="gpuctl" so that the browser
// asks for them. Serve them over TLS (a Basic password is only encoded). Other paths outside /api
// stay JSON 404s.
//
// # Job identifiers
//
// A jobId is "<namespace>.<name>"; GET /api/v1/jobs/{jobId} also accepts a bare name when
// exactly one namespace has a job of that name (see package cluster for jobs, their statuses,
// pools and nodes).
//
// # Usage
//
//	tokens, err := httpapi.LoadStaticTokens("/etc/gpuctl/tokens.csv", log)
//	if err != nil {
//		return err
//	}
//	handler := httpapi.New(httpapi.Options{
//		Backend:  d, // the daemon
//		Writer:   d,
//		Kube:     clientset,
//		Tokens:   tokens,
//		Registry: registry,
//		Webhooks: map[string]http.Handler{"/hooks/github": githubHook},
//		Ready:    d.Ready,
//		Log:      log,
//	})
//	srv := &http.Server{Addr: ":8080", Handler: handler, ReadHeaderTimeout: 10 * time.Second,
//		ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
//
// # Limits
//
// Request bodies are capped at MaxRequestBody, the writes' at MaxWriteBody (webhooks cap their
// own). The server's read and
// write timeouts hold for every route except those wrapped in Streaming: a route that streams
// its answer (a log follow, an event stream) must be, or the write timeout cuts it and the
// read timeout cancels its context. No route streams today.
//
// The handler reads the cluster through a cluster.Reader: from Options.Objects when set (the
// daemon gives cluster.InformerObjects, so that a request sends no LIST to the API server),
// else with plain List and Get calls on every request. The daemon's ServiceAccount needs list
// and watch on jobs, deployments, statefulsets, replicasets, pods, nodes, resourcequotas and
// events cluster-wide and on configmaps in the system namespace, and get on pods/log.
package httpapi
