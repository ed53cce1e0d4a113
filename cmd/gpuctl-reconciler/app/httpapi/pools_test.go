package httpapi

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestListPools(t *testing.T) {
	h, _ := testServer(t)
	var obj struct {
		Items []map[string]any `json:"items"`
	}
	get(t, h, "/api/v1/pools", http.StatusOK, &obj)
	if len(obj.Items) != 3 {
		t.Fatalf("%d pools, want 3", len(obj.Items))
	}
	wantKeys(t, "pool", obj.Items[0], "name", "description", "registered", "status", "nodeCount",
		"gpuTotal", "gpuUsed", "gpuFree", "gpuType")

	var l PoolList
	get(t, h, "/api/v1/pools", http.StatusOK, &l)
	want := []PoolSummary{
		{Name: "default", Description: "nodes in no pool", Status: PoolActive, NodeCount: 2,
			GPUTotal: 4, GPUUsed: 1, GPUFree: 3, GPUType: []string{"t4"}},
		{Name: "inference-pool", Description: "for inference", Registered: true, Status: PoolEmpty,
			GPUType: []string{"a10-24g"}},
		// gpu-1 runs sft (4 GPUs; old-xyz has succeeded), gpu-2 an unmanaged pod with 2.
		{Name: "training-pool", Description: "for training", Registered: true, Status: PoolActive, NodeCount: 2,
			GPUTotal: 16, GPUUsed: 6, GPUFree: 10, GPUType: []string{"a100-40g", "a100-80g"}},
	}
	if !reflect.DeepEqual(l.Items, want) {
		t.Errorf("pools:\n got %+v\nwant %+v", l.Items, want)
	}
}

func TestGetPool(t *testing.T) {
	h, _ := testServer(t)
	var obj map[string]any
	get(t, h, "/api/v1/pools/training-pool", http.StatusOK, &obj)
	wantKeys(t, "pool detail", obj, "name", "description", "registered", "status", "nodes", "declaredNodes",
		"gpuTotal", "gpuUsed", "gpuFree", "gpuType", "jobs")

	var d PoolDetail
	get(t, h, "/api/v1/pools/training-pool", http.StatusOK, &d)
	want := PoolDetail{Name: "training-pool", Description: "for training", Registered: true, Status: PoolActive,
		Nodes: []string{"gpu-1", "gpu-2"},
		DeclaredNodes: []render.PoolRegistryEntry{{Name: "gpu-1", GPUType: "a100-80g"},
			{Name: "gpu-2", GPUType: "a100-40g"}},
		GPUTotal: 16, GPUUsed: 6, GPUFree: 10, GPUType: map[string]int64{"a100-80g": 8, "a100-40g": 8},
		Jobs: []PoolJob{
			{JobID: "alice.nb", Name: "nb", Kind: "notebook", Status: StatusPending},
			{JobID: "alice.sft", Name: "sft", Kind: "training", Status: StatusRunning, GPU: 4},
		},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("training-pool:\n got %+v\nwant %+v", d, want)
	}

	d = PoolDetail{}
	get(t, h, "/api/v1/pools/inference-pool", http.StatusOK, &d)
	want = PoolDetail{Name: "inference-pool", Description: "for inference", Registered: true, Status: PoolEmpty,
		Nodes: []string{}, DeclaredNodes: []render.PoolRegistryEntry{{Name: "inf-1", GPUType: "a10-24g"}},
		GPUType: map[string]int64{"a10-24g": 0}, Jobs: []PoolJob{}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("inference-pool:\n got %+v\nwant %+v", d, want)
	}

	d = PoolDetail{}
	get(t, h, "/api/v1/pools/default", http.StatusOK, &d)
	if d.Registered || len(d.Nodes) != 2 || len(d.Jobs) != 2 || d.GPUType["t4"] != 4 {
		t.Errorf("default: %+v", d) // bob.llm and bob.web; bob.failed-run has finished
	}
}

func TestGetPoolNotFound(t *testing.T) {
	h, _ := testServer(t)
	wantError(t, do(t, h, http.MethodGet, "/api/v1/pools/nowhere", userToken), http.StatusNotFound)
}

func TestPoolRegistryEdgeCases(t *testing.T) {
	bad := registry("broken", "bad nodes", `{not json`)
	noName := registry("x", "", "")
	delete(noName.Data, "name")
	gpu := node("gpu-9", "unlisted", "", 2, true) // a pool only on a node label, GPUs without a type
	h, _ := testServer(t, []runtime.Object{bad, noName, gpu}...)

	var l PoolList
	get(t, h, "/api/v1/pools", http.StatusOK, &l)
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"broken", "unlisted", "x"}) {
		t.Errorf("pools %v", names)
	}
	var d PoolDetail
	get(t, h, "/api/v1/pools/broken", http.StatusOK, &d)
	if len(d.DeclaredNodes) != 0 || d.DeclaredNodes == nil {
		t.Errorf("broken: %+v", d)
	}
	d = PoolDetail{}
	get(t, h, "/api/v1/pools/unlisted", http.StatusOK, &d)
	if d.Registered || d.GPUType[unknownGPUType] != 2 || d.Status != PoolActive {
		t.Errorf("unlisted: %+v", d)
	}
}
