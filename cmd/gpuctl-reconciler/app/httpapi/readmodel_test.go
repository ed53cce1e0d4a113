package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The values of the read model are tested in package cluster; these tests check the routes:
// the JSON shapes, the query parsing, the status codes, and that each answer is the reader's.

func TestReadModelShapes(t *testing.T) {
	h, _ := testServer(t)

	var list pageOfMaps
	get(t, h, "/api/v1/jobs", http.StatusOK, &list)
	if list.Total != 6 || len(list.Items) != 6 || list.Page != 1 || list.PageSize != 20 {
		t.Fatalf("jobs: total %d, %d items, page %d, pageSize %d", list.Total, len(list.Items), list.Page, list.PageSize)
	}
	wantKeys(t, "job", list.Items[0], "jobId", "name", "namespace", "kind", "pool", "status", "gpu", "gpuType", "startedAt")

	var obj map[string]any
	get(t, h, "/api/v1/jobs/alice.sft", http.StatusOK, &obj)
	wantKeys(t, "job detail", obj, "jobId", "name", "namespace", "kind", "version", "yamlContent", "source",
		"description", "status", "pool", "priority", "resources", "createdAt", "startedAt", "k8sResources", "attempts")
	wantKeys(t, "resources", obj["resources"].(map[string]any), "gpu", "gpuType", "cpu", "memory", "pods", "gpuTotal")
	// metrics only with what Prometheus measured (TestJobMetrics): without one, none, not zeros
	wantKeys(t, "k8sResources", obj["k8sResources"].(map[string]any), "kind", "jobName", "pods")

	var items struct {
		Items []map[string]any `json:"items"`
	}
	get(t, h, "/api/v1/pools", http.StatusOK, &items)
	if len(items.Items) != 3 {
		t.Fatalf("%d pools, want 3", len(items.Items))
	}
	wantKeys(t, "pool", items.Items[0], "name", "description", "registered", "status", "nodeCount",
		"gpuTotal", "gpuUsed", "gpuFree", "gpuType")
	obj = nil
	get(t, h, "/api/v1/pools/training-pool", http.StatusOK, &obj)
	wantKeys(t, "pool detail", obj, "name", "description", "registered", "status", "nodes", "declaredNodes",
		"gpuTotal", "gpuUsed", "gpuFree", "gpuType", "jobs")

	list = pageOfMaps{}
	get(t, h, "/api/v1/nodes", http.StatusOK, &list)
	if list.Total != 4 || len(list.Items) != 4 || list.Page != 1 || list.PageSize != 20 {
		t.Fatalf("nodes: total %d, %d items, page %d, pageSize %d", list.Total, len(list.Items), list.Page, list.PageSize)
	}
	wantKeys(t, "node", list.Items[0], "nodeName", "status", "unschedulable", "gpuTotal", "gpuUsed", "gpuFree",
		"gpuType", "pool", "boundPools", "cpu", "memory", "createdAt", "g8sLabels")
	obj = nil
	get(t, h, "/api/v1/nodes/gpu-1", http.StatusOK, &obj)
	wantKeys(t, "node detail", obj, "nodeName", "status", "unschedulable", "gpuType", "pool", "boundPools",
		"resources", "labels", "createdAt", "lastUpdatedAt", "pods")
	wantKeys(t, "node resources", obj["resources"].(map[string]any), "cpuTotal", "cpuUsed", "memoryTotal",
		"memoryUsed", "gpuTotal", "gpuUsed", "gpuFree")

	items.Items = nil
	get(t, h, "/api/v1/quotas", http.StatusOK, &items)
	if len(items.Items) != 2 {
		t.Fatalf("%d quotas, want 2 (carol's is not gpuctl's)", len(items.Items))
	}
	wantKeys(t, "quota", items.Items[0], "user", "namespace", "name", "hard", "used", "usage")
	for _, k := range []string{"hard", "used", "usage"} {
		wantKeys(t, k, items.Items[0][k].(map[string]any), "cpu", "memory", "gpu")
	}
	obj = nil
	get(t, h, "/api/v1/quotas/bob", http.StatusOK, &obj)
	wantKeys(t, "quota", obj, "user", "namespace", "name", "hard", "used", "usage", "jobs")
	if u := obj["usage"].(map[string]any); u["cpu"] != nil || u["gpu"] != 50.0 {
		t.Errorf("bob usage %v", u)
	}
}

// Each route answers, byte for byte, the JSON of what the reader returns for its query.
func TestReadModelAnswersAreTheReaders(t *testing.T) {
	h, _ := testServer(t)
	r := &cluster.Reader{Client: fake.NewClientset(clusterfixture.Objects()...)}
	page := func(n, size int) cluster.Page { return cluster.Page{Number: n, Size: size} }
	tests := map[string]func(context.Context) (any, error){
		"/api/v1/jobs": func(ctx context.Context) (any, error) {
			return r.Jobs(ctx, cluster.JobFilter{Page: page(1, 20)})
		},
		"/api/v1/jobs?kind=inference&pool=default&status=Partially%20Running": func(ctx context.Context) (any, error) {
			return r.Jobs(ctx, cluster.JobFilter{Kind: "inference", Pool: "default", Status: "partially running", Page: page(1, 20)})
		},
		"/api/v1/jobs?kind=training&page=2&pageSize=2": func(ctx context.Context) (any, error) {
			return r.Jobs(ctx, cluster.JobFilter{Kind: "training", Page: page(2, 2)})
		},
		"/api/v1/jobs/alice.sft": func(ctx context.Context) (any, error) { return r.Job(ctx, "alice.sft") },
		"/api/v1/jobs/llm":       func(ctx context.Context) (any, error) { return r.Job(ctx, "bob.llm") },
		"/api/v1/pools":          func(ctx context.Context) (any, error) { return r.Pools(ctx) },
		"/api/v1/pools/training-pool": func(ctx context.Context) (any, error) {
			return r.Pool(ctx, "training-pool")
		},
		"/api/v1/nodes": func(ctx context.Context) (any, error) {
			return r.Nodes(ctx, cluster.NodeFilter{Page: page(1, 20)})
		},
		"/api/v1/nodes?pool=training-pool&gpuType=g8s.host/A100-80G&status=ready": func(ctx context.Context) (any, error) {
			return r.Nodes(ctx, cluster.NodeFilter{Pool: "training-pool", GPUType: "a100-80g", Status: "Ready", Page: page(1, 20)})
		},
		"/api/v1/nodes?page=2&pageSize=3": func(ctx context.Context) (any, error) {
			return r.Nodes(ctx, cluster.NodeFilter{Page: page(2, 3)})
		},
		"/api/v1/nodes/gpu-1":  func(ctx context.Context) (any, error) { return r.Node(ctx, "gpu-1") },
		"/api/v1/quotas":       func(ctx context.Context) (any, error) { return r.Quotas(ctx) },
		"/api/v1/quotas/alice": func(ctx context.Context) (any, error) { return r.Quota(ctx, "alice") },
	}
	for path, read := range tests {
		t.Run(path, func(t *testing.T) {
			v, err := read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			w := do(t, h, http.MethodGet, path, userToken)
			if w.Code != http.StatusOK || w.Body.String() != want.String() {
				t.Errorf("GET %s: %d\n%s\nwant 200\n%s", path, w.Code, w.Body, want.String())
			}
		})
	}
}

func TestListBadQuery(t *testing.T) {
	h, _ := testServer(t)
	queries := map[string][]string{
		"/api/v1/jobs": {"pageSize=0", "pageSize=501", "pageSize=x", "page=0", "page=-1", "page=1.5",
			"page=99999999999999999999", "status=bogus", "kind=pool", "kind=Training", "pool=bad%20pool!"},
		"/api/v1/nodes": {"pageSize=0", "status=bogus", "pool=a%20b", "gpuType=a%2Fb%2Fc"},
	}
	for path, qs := range queries {
		for _, query := range qs {
			e := wantError(t, do(t, h, http.MethodGet, path+"?"+query, userToken), http.StatusBadRequest)
			param, _, _ := strings.Cut(query, "=")
			if !strings.HasPrefix(e.Message, param+":") {
				t.Errorf("%s?%s: message %q does not name the parameter", path, query, e.Message)
			}
		}
	}
}

func TestReadModelNotFound(t *testing.T) {
	h, _ := testServer(t)
	paths := []string{"/api/v1/pools/nowhere", "/api/v1/nodes/nope", "/api/v1/quotas/carol", "/api/v1/quotas/nobody"}
	for _, id := range []string{"alice.nope", "nope", "bob.other", "bob.not-a-job", "Bad_NS.x", "carol.sft", "alice."} {
		paths = append(paths, "/api/v1/jobs/"+id)
	}
	for _, path := range paths {
		e := wantError(t, do(t, h, http.MethodGet, path, userToken), http.StatusNotFound)
		if !strings.HasPrefix(e.Message, "unknown ") {
			t.Errorf("%s: message %q", path, e.Message)
		}
	}
}

func TestGetJobAmbiguousName(t *testing.T) {
	h, _ := testServer(t, clusterfixture.Job("alice", "dup", "default", 0, batchv1.JobStatus{}),
		clusterfixture.Deployment("bob", "dup", "inference", "default", 1, 0, 0))
	e := wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/dup", userToken), http.StatusBadRequest)
	if !strings.Contains(e.Message, "alice.dup, bob.dup") {
		t.Errorf("message %q does not list the candidates", e.Message)
	}
	var d cluster.JobDetail
	get(t, h, "/api/v1/jobs/bob.dup", http.StatusOK, &d)
	if d.K8sResources.Kind != "Deployment" {
		t.Errorf("bob.dup: %+v", d)
	}
}
