package httpapi

import (
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

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

func TestListNodes(t *testing.T) {
	h, _ := testServer(t)
	var obj pageOfMaps
	get(t, h, "/api/v1/nodes", http.StatusOK, &obj)
	if obj.Total != 4 || len(obj.Items) != 4 {
		t.Fatalf("total %d, %d items", obj.Total, len(obj.Items))
	}
	wantKeys(t, "node", obj.Items[0], "nodeName", "status", "unschedulable", "gpuTotal", "gpuUsed", "gpuFree",
		"gpuType", "pool", "boundPools", "cpu", "memory", "createdAt")

	var l NodeList
	get(t, h, "/api/v1/nodes", http.StatusOK, &l)
	if got := nodeNames(l); !slices.Equal(got, []string{"cpu-1", "gpu-1", "gpu-2", "gpu-3"}) {
		t.Fatalf("nodes %v", got)
	}
	want := NodeSummary{NodeName: "gpu-1", Status: NodeReady, GPUTotal: 8, GPUUsed: 4, GPUFree: 4,
		GPUType: "a100-80g", Pool: "training-pool", BoundPools: []string{"training-pool"}, CPU: "64",
		Memory: "256Gi", CreatedAt: t0}
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

func TestListNodesFilters(t *testing.T) {
	h, _ := testServer(t)
	tests := map[string]struct {
		query string
		want  []string
	}{
		"pool":          {"pool=training-pool", []string{"gpu-1", "gpu-2"}},
		"default pool":  {"pool=default", []string{"cpu-1", "gpu-3"}},
		"gpu type":      {"gpuType=A100-80G", []string{"gpu-1"}},
		"prefixed type": {"gpuType=g8s.host/t4", []string{"gpu-3"}},
		"not ready":     {"status=NotReady", []string{"gpu-2"}},
		"ready":         {"status=ready&pool=training-pool", []string{"gpu-1"}},
		"page":          {"page=2&pageSize=3", []string{"gpu-3"}},
		"past end":      {"page=9", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var l NodeList
			get(t, h, "/api/v1/nodes?"+tc.query, http.StatusOK, &l)
			if got := nodeNames(l); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	for _, query := range []string{"pageSize=0", "status=bogus", "pool=a%20b", "gpuType=a%2Fb%2Fc"} {
		wantError(t, do(t, h, http.MethodGet, "/api/v1/nodes?"+query, userToken), http.StatusBadRequest)
	}
}

func TestGetNode(t *testing.T) {
	h, _ := testServer(t)
	var obj map[string]any
	get(t, h, "/api/v1/nodes/gpu-1", http.StatusOK, &obj)
	wantKeys(t, "node detail", obj, "nodeName", "status", "unschedulable", "gpuType", "pool", "boundPools",
		"resources", "labels", "createdAt", "lastUpdatedAt")
	wantKeys(t, "node resources", obj["resources"].(map[string]any), "cpuTotal", "cpuUsed", "memoryTotal",
		"memoryUsed", "gpuTotal", "gpuUsed", "gpuFree")

	var d NodeDetail
	get(t, h, "/api/v1/nodes/gpu-1", http.StatusOK, &d)
	updated := at(2 * time.Hour).UTC()
	want := NodeDetail{NodeName: "gpu-1", Status: NodeReady, GPUType: "a100-80g", Pool: "training-pool",
		BoundPools: []string{"training-pool"},
		Resources: NodeResources{CPUTotal: 64, CPUUsed: 32, MemoryTotal: "256Gi", MemoryUsed: "128Gi",
			GPUTotal: 8, GPUUsed: 4, GPUFree: 4},
		Labels: []Label{{"g8s.host/gpu-type", "a100-80g"}, {"g8s.host/pool", "training-pool"},
			{"kubernetes.io/hostname", "gpu-1"}},
		CreatedAt: t0, LastUpdatedAt: &updated}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("gpu-1:\n got %+v\nwant %+v", d, want)
	}
	wantError(t, do(t, h, http.MethodGet, "/api/v1/nodes/nope", userToken), http.StatusNotFound)
}

func TestNodeUsageCountsInitContainersAndOverflow(t *testing.T) {
	n := node("n", "", "", 2, true)
	p := pod("x", "p", "p", "n", corev1.PodRunning, 1, nil)
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{"nvidia.com/gpu": q("2"), corev1.ResourceCPU: q("1")}}}}
	over := pod("x", "q", "q", "n", corev1.PodRunning, 2, nil) // more than allocatable: free stays 0
	h, _ := testServer(t, []runtime.Object{n, p, over}...)
	var d NodeDetail
	get(t, h, "/api/v1/nodes/n", http.StatusOK, &d)
	if d.Resources.GPUUsed != 4 || d.Resources.GPUFree != 0 || d.Resources.CPUUsed != 64 || d.LastUpdatedAt == nil {
		t.Errorf("resources %+v", d.Resources)
	}
}
