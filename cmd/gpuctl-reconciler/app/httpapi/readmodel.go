package httpapi

import (
	"context"
	"net/http"

	"github.com/gpuctl/gpuctl/cluster"
)

// The routes of the read model (package cluster): jobs, pools, nodes and quotas. Each parses
// its path and query and asks the model as the caller sees it (server.model); fromModel writes
// the answer as JSON, and fail turns cluster's typed errors into 404 and 400.

// fromModel is the handler of a read-model route: read's answer as JSON, or its error.
func fromModel[T any](s *server, read func(rd cluster.Model, r *http.Request) (T, error)) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		rd, err := s.model(r.Context())
		if err != nil {
			return err
		}
		v, err := read(rd, r)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	}
}

// listJobs answers GET /api/v1/jobs?kind&pool&status&page&pageSize.
func listJobs(rd cluster.Model, r *http.Request) (cluster.JobList, error) {
	q := r.URL.Query()
	page, err := parsePage(q)
	if err != nil {
		return cluster.JobList{}, err
	}
	return rd.Jobs(r.Context(), cluster.JobFilter{Kind: q.Get("kind"), Pool: q.Get("pool"),
		Status: q.Get("status"), Page: page})
}

// listPools answers GET /api/v1/pools.
func listPools(rd cluster.Model, r *http.Request) (cluster.PoolList, error) {
	return rd.Pools(r.Context())
}

// getPool answers GET /api/v1/pools/{name}.
func getPool(rd cluster.Model, r *http.Request) (cluster.PoolDetail, error) {
	return rd.Pool(r.Context(), r.PathValue("name"))
}

// listNodes answers GET /api/v1/nodes?pool&gpuType&status&page&pageSize.
func listNodes(rd cluster.Model, r *http.Request) (cluster.NodeList, error) {
	q := r.URL.Query()
	page, err := parsePage(q)
	if err != nil {
		return cluster.NodeList{}, err
	}
	return rd.Nodes(r.Context(), cluster.NodeFilter{Pool: q.Get("pool"), GPUType: q.Get("gpuType"),
		Status: q.Get("status"), Page: page})
}

// getNode answers GET /api/v1/nodes/{name}.
func getNode(rd cluster.Model, r *http.Request) (cluster.NodeDetail, error) {
	return rd.Node(r.Context(), r.PathValue("name"))
}

// listQuotas answers GET /api/v1/quotas.
func listQuotas(rd cluster.Model, r *http.Request) (cluster.QuotaList, error) {
	return rd.Quotas(r.Context())
}

// getQuota answers GET /api/v1/quotas/{user}: the user's quota (the first by name when a
// namespace has several).
func getQuota(rd cluster.Model, r *http.Request) (cluster.Quota, error) {
	return rd.Quota(r.Context(), r.PathValue("user"))
}

// poolSummaries are the summaries of every pool, by name, for the web page.
func (s *server) poolSummaries(ctx context.Context) ([]cluster.PoolSummary, error) {
	rd, err := s.model(ctx)
	if err != nil {
		return nil, err
	}
	list, err := rd.Pools(ctx)
	return list.Items, err
}

// quotas are gpuctl's quotas in all namespaces, by namespace and name, for the web page.
func (s *server) quotas(ctx context.Context) ([]cluster.Quota, error) {
	rd, err := s.model(ctx)
	if err != nil {
		return nil, err
	}
	list, err := rd.Quotas(ctx)
	return list.Items, err
}

// describeJob answers GET /api/v1/jobs/{jobId}/description.
func describeJob(rd cluster.Model, r *http.Request) (cluster.JobDescription, error) {
	return rd.JobDescription(r.Context(), r.PathValue("jobId"))
}

// listJobPods answers GET /api/v1/jobpods?namespace&kind&pool&status&selector.
func listJobPods(rd cluster.Model, r *http.Request) (cluster.JobPodList, error) {
	q := r.URL.Query()
	return rd.JobPods(r.Context(), cluster.JobPodFilter{Namespace: q.Get("namespace"), Kind: q.Get("kind"),
		Pool: q.Get("pool"), Status: q.Get("status"), Selector: q.Get("selector")})
}
