package httpapi

import (
	"context"
	"net/http"

	"github.com/gpuctl/gpuctl/cluster"
)

// The routes of the read model (package cluster): jobs, pools, nodes and quotas. Each parses
// its query, asks the reader and writes its answer as JSON; cluster's typed errors become 404
// and 400 in fail.

// listJobs serves GET /api/v1/jobs?kind&pool&status&page&pageSize.
func (s *server) listJobs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	page, err := parsePage(q)
	if err != nil {
		return err
	}
	rd, err := s.reader()
	if err != nil {
		return err
	}
	list, err := rd.Jobs(r.Context(), cluster.JobFilter{Kind: q.Get("kind"), Pool: q.Get("pool"),
		Status: q.Get("status"), Page: page})
	return answer(w, list, err)
}

// getJob serves GET /api/v1/jobs/{jobId}.
func (s *server) getJob(w http.ResponseWriter, r *http.Request) error {
	rd, err := s.reader()
	if err != nil {
		return err
	}
	job, err := rd.Job(r.Context(), r.PathValue("jobId"))
	return answer(w, job, err)
}

// listPools serves GET /api/v1/pools.
func (s *server) listPools(w http.ResponseWriter, r *http.Request) error {
	items, err := s.poolSummaries(r.Context())
	return answer(w, cluster.PoolList{Items: items}, err)
}

// poolSummaries are the summaries of every pool, by name (for the API and the web page).
func (s *server) poolSummaries(ctx context.Context) ([]cluster.PoolSummary, error) {
	rd, err := s.reader()
	if err != nil {
		return nil, err
	}
	list, err := rd.Pools(ctx)
	return list.Items, err
}

// getPool serves GET /api/v1/pools/{name}.
func (s *server) getPool(w http.ResponseWriter, r *http.Request) error {
	rd, err := s.reader()
	if err != nil {
		return err
	}
	pool, err := rd.Pool(r.Context(), r.PathValue("name"))
	return answer(w, pool, err)
}

// listNodes serves GET /api/v1/nodes?pool&gpuType&status&page&pageSize.
func (s *server) listNodes(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	page, err := parsePage(q)
	if err != nil {
		return err
	}
	rd, err := s.reader()
	if err != nil {
		return err
	}
	list, err := rd.Nodes(r.Context(), cluster.NodeFilter{Pool: q.Get("pool"), GPUType: q.Get("gpuType"),
		Status: q.Get("status"), Page: page})
	return answer(w, list, err)
}

// getNode serves GET /api/v1/nodes/{name}.
func (s *server) getNode(w http.ResponseWriter, r *http.Request) error {
	rd, err := s.reader()
	if err != nil {
		return err
	}
	node, err := rd.Node(r.Context(), r.PathValue("name"))
	return answer(w, node, err)
}

// listQuotas serves GET /api/v1/quotas.
func (s *server) listQuotas(w http.ResponseWriter, r *http.Request) error {
	qs, err := s.quotas(r.Context())
	return answer(w, cluster.QuotaList{Items: qs}, err)
}

// quotas are gpuctl's quotas in all namespaces, by namespace and name (for the API and the
// web page).
func (s *server) quotas(ctx context.Context) ([]cluster.Quota, error) {
	rd, err := s.reader()
	if err != nil {
		return nil, err
	}
	list, err := rd.Quotas(ctx)
	return list.Items, err
}

// getQuota serves GET /api/v1/quotas/{user}: the user's quota (the first by name when a
// namespace has several).
func (s *server) getQuota(w http.ResponseWriter, r *http.Request) error {
	rd, err := s.reader()
	if err != nil {
		return err
	}
	quota, err := rd.Quota(r.Context(), r.PathValue("user"))
	return answer(w, quota, err)
}

// answer writes v as a 200 answer, or returns err.
func answer(w http.ResponseWriter, v any, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
