package cluster

import (
	"reflect"
	"slices"
	"testing"
	"time"

	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func nodeNames(l NodeList) []string {
	var names []string
	for _, n := range l.Items {
		names = append(names, n.NodeName)
	}
	return names
}

func TestNodes(t *testing.T) {
	l, err := testReader(t).Nodes(ctx, NodeFilter{Page: Page{Number: 1, Size: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Total != 4 || len(l.Items) != 4 || l.Page != 1 || l.PageSize != 20 {
		t.Fatalf("total %d, %d items, page %d, pageSize %d", l.Total, len(l.Items), l.Page, l.PageSize)
	}
	if got := nodeNames(l); !slices.Equal(got, []string{"cpu-1", "gpu-1", "gpu-2", "gpu-3"}) {
		t.Fatalf("nodes %v", got)
	}
	want := NodeSummary{NodeName: "gpu-1", Status: NodeReady, GPUTotal: 8, GPUUsed: 4, GPUFree: 4,
		GPUType: "a100-80g", Pool: "training-pool", BoundPools: []string{"training-pool"}, CPU: "64",
		Memory: "256Gi", CreatedAt: fx.T0,
		G8sLabels: []Label{{"g8s.host/gpu-type", "a100-80g"}, {"g8s.host/pool", "training-pool"}}}
	if g := l.Items[1]; !reflect.DeepEqual(g, want) {
		t.Errorf("gpu-1:\n got %+v\nwant %+v", g, want)
	}
	if g := l.Items[2]; g.Status != NodeNotReady || g.GPUUsed != 2 {
		t.Errorf("gpu-2: %+v", g)
	}
	if g := l.Items[0]; g.Pool != "default" || g.GPUTotal != 0 || g.GPUType != "" {
		t.Errorf("cpu-1: %+v", g)
	}
}

func TestNodesFilters(t *testing.T) {
	r := testReader(t)
	tests := map[string]struct {
		filter NodeFilter
		want   []string
	}{
		"pool":          {NodeFilter{Pool: "training-pool"}, []string{"gpu-1", "gpu-2"}},
		"default pool":  {NodeFilter{Pool: "default"}, []string{"cpu-1", "gpu-3"}},
		"gpu type":      {NodeFilter{GPUType: "A100-80G"}, []string{"gpu-1"}},
		"prefixed type": {NodeFilter{GPUType: "g8s.host/t4"}, []string{"gpu-3"}},
		"not ready":     {NodeFilter{Status: "NotReady"}, []string{"gpu-2"}},
		"not-ready":     {NodeFilter{Status: "not-ready"}, []string{"gpu-2"}},
		"ready":         {NodeFilter{Status: "ready", Pool: "training-pool"}, []string{"gpu-1"}},
		"page":          {NodeFilter{Page: Page{Number: 2, Size: 3}}, []string{"gpu-3"}},
		"past end":      {NodeFilter{Page: Page{Number: 9, Size: 20}}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := r.Nodes(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := nodeNames(l); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if l.Items == nil {
				t.Error("items is nil, want []")
			}
		})
	}
	for name, tc := range map[string]struct {
		filter NodeFilter
		field  string
	}{
		"status":   {NodeFilter{Status: "bogus"}, "status"},
		"pool":     {NodeFilter{Pool: "a b"}, "pool"},
		"gpu type": {NodeFilter{GPUType: "a/b/c"}, "gpuType"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.Nodes(ctx, tc.filter)
			wantFilterError(t, err, tc.field)
		})
	}
}

func TestNode(t *testing.T) {
	r := testReader(t)
	d, err := r.Node(ctx, "gpu-1")
	if err != nil {
		t.Fatal(err)
	}
	updated := fx.At(2 * time.Hour).UTC()
	want := NodeDetail{NodeName: "gpu-1", Status: NodeReady, GPUType: "a100-80g", Pool: "training-pool",
		BoundPools: []string{"training-pool"},
		Resources: NodeResources{CPUTotal: 64, CPUUsed: 32, MemoryTotal: "256Gi", MemoryUsed: "128Gi",
			GPUTotal: 8, GPUUsed: 4, GPUFree: 4},
		Labels: []Label{{"g8s.host/gpu-type", "a100-80g"}, {"g8s.host/pool", "training-pool"},
			{"kubernetes.io/hostname", "gpu-1"}},
		CreatedAt: fx.T0, LastUpdatedAt: &updated,
		Pods: []NodePod{{Namespace: "alice", Name: "sft-abcde", JobID: "alice.sft", GPU: 4, Status: "Running"}}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("gpu-1:\n got %+v\nwant %+v", d, want)
	}
	_, err = r.Node(ctx, "nope")
	wantNotFound(t, err, "node", "nope")
}

func TestNodeUsageCountsInitContainersAndOverflow(t *testing.T) {
	n := fx.Node("n", "", "", 2, true)
	p := fx.Pod("x", "p", "p", "n", corev1.PodRunning, 1, nil)
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{"nvidia.com/gpu": fx.Q("2"), corev1.ResourceCPU: fx.Q("1")}}}}
	over := fx.Pod("x", "q", "q", "n", corev1.PodRunning, 2, nil) // more than allocatable: free stays 0
	d, err := testReader(t, []runtime.Object{n, p, over}...).Node(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	if d.Resources.GPUUsed != 4 || d.Resources.GPUFree != 0 || d.Resources.CPUUsed != 64 || d.LastUpdatedAt == nil {
		t.Errorf("resources %+v", d.Resources)
	}
}
