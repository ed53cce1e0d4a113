package cluster

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestPools(t *testing.T) {
	l, err := testReader(t).Pools(ctx)
	if err != nil {
		t.Fatal(err)
	}
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

func TestPool(t *testing.T) {
	r := testReader(t)
	d := mustPool(t, r, "training-pool")
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

	d = mustPool(t, r, "inference-pool")
	want = PoolDetail{Name: "inference-pool", Description: "for inference", Registered: true, Status: PoolEmpty,
		Nodes: []string{}, DeclaredNodes: []render.PoolRegistryEntry{{Name: "inf-1", GPUType: "a10-24g"}},
		GPUType: map[string]int64{"a10-24g": 0}, Jobs: []PoolJob{}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("inference-pool:\n got %+v\nwant %+v", d, want)
	}

	d = mustPool(t, r, "default")
	if d.Registered || len(d.Nodes) != 2 || len(d.Jobs) != 2 || d.GPUType["t4"] != 4 {
		t.Errorf("default: %+v", d) // bob.llm and bob.web; bob.failed-run has finished
	}
}

func mustPool(t *testing.T, r *Reader, name string) PoolDetail {
	t.Helper()
	d, err := r.Pool(ctx, name)
	if err != nil {
		t.Fatalf("pool %s: %v", name, err)
	}
	return d
}

func TestPoolNotFound(t *testing.T) {
	_, err := testReader(t).Pool(ctx, "nowhere")
	wantNotFound(t, err, "pool", "nowhere")
}

func TestPoolRegistryEdgeCases(t *testing.T) {
	bad := fx.Registry("broken", "bad nodes", `{not json`)
	noName := fx.Registry("x", "", "")
	delete(noName.Data, "name")
	gpu := fx.Node("gpu-9", "unlisted", "", 2, true) // a pool only on a node label, GPUs without a type
	var log bytes.Buffer
	r := testReader(t, []runtime.Object{bad, noName, gpu}...)
	r.Log = slog.New(slog.NewTextHandler(&log, nil))

	l, err := r.Pools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"broken", "unlisted", "x"}) {
		t.Errorf("pools %v", names)
	}
	d := mustPool(t, r, "broken")
	if len(d.DeclaredNodes) != 0 || d.DeclaredNodes == nil {
		t.Errorf("broken: %+v", d)
	}
	if !strings.Contains(log.String(), "bad node list") || !strings.Contains(log.String(), keys.PoolRegistryPrefix+"broken") {
		t.Errorf("the bad node list is not logged with its ConfigMap:\n%s", log.String())
	}
	d = mustPool(t, r, "unlisted")
	if d.Registered || d.GPUType[unknownGPUType] != 2 || d.Status != PoolActive {
		t.Errorf("unlisted: %+v", d)
	}
}

// The registry lies in the reader's namespace, the system namespace by default, and what
// render writes is what the reader reads.
func TestPoolRegistryAsRenderWritesIt(t *testing.T) {
	rec := render.PoolRecord{Name: "p", Description: "rendered", Nodes: []render.PoolRegistryEntry{{Name: "n1", GPUType: "t4"}}}
	elsewhere := render.PoolRecord{Name: "q"}.ConfigMap("other", "q.yaml")
	r := testReader(t, rec.ConfigMap("gpuctl-sys", "p.yaml"), elsewhere)
	r.Namespace = "gpuctl-sys"
	l, err := r.Pools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Name != "p" || !l.Items[0].Registered || l.Items[0].Description != "rendered" {
		t.Fatalf("pools %+v, want p alone", l.Items)
	}
	if d := mustPool(t, r, "p"); !reflect.DeepEqual(d.DeclaredNodes, rec.Nodes) {
		t.Errorf("declared nodes %+v, want %+v", d.DeclaredNodes, rec.Nodes)
	}
	r.Namespace = ""
	if l, err := r.Pools(ctx); err != nil || len(l.Items) != 0 {
		t.Errorf("default namespace %s: pools %+v, %v", keys.SystemNamespace, l.Items, err)
	}
}
