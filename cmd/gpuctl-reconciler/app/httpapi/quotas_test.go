package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestListQuotas(t *testing.T) {
	h, _ := testServer(t)
	var obj struct {
		Items []map[string]any `json:"items"`
	}
	get(t, h, "/api/v1/quotas", http.StatusOK, &obj)
	if len(obj.Items) != 2 {
		t.Fatalf("%d quotas, want 2 (carol's is not gpuctl's)", len(obj.Items))
	}
	wantKeys(t, "quota", obj.Items[0], "user", "namespace", "name", "hard", "used", "usage")
	for _, k := range []string{"hard", "used", "usage"} {
		wantKeys(t, k, obj.Items[0][k].(map[string]any), "cpu", "memory", "gpu")
	}

	var l QuotaList
	get(t, h, "/api/v1/quotas", http.StatusOK, &l)
	want := []Quota{
		{User: "alice", Namespace: "alice", Name: "team-quota",
			Hard:  QuotaResources{CPU: ptr(10.0), Memory: ptr("20Gi"), GPU: ptr[int64](4)},
			Used:  QuotaResources{CPU: ptr(5.0), Memory: ptr("5Gi"), GPU: ptr[int64](4)},
			Usage: QuotaUsage{CPU: ptr(50.0), Memory: ptr(25.0), GPU: ptr(100.0)}},
		{User: "bob", Namespace: "bob", Name: "team-quota",
			Hard:  QuotaResources{GPU: ptr[int64](2)},
			Used:  QuotaResources{GPU: ptr[int64](1)},
			Usage: QuotaUsage{GPU: ptr(50.0)}},
	}
	if !reflect.DeepEqual(l.Items, want) {
		t.Errorf("quotas:\n got %s\nwant %s", dump(l.Items), dump(want))
	}
}

func TestGetQuota(t *testing.T) {
	h, _ := testServer(t)
	var obj map[string]any
	get(t, h, "/api/v1/quotas/bob", http.StatusOK, &obj)
	wantKeys(t, "quota", obj, "user", "namespace", "name", "hard", "used", "usage")
	if u := obj["usage"].(map[string]any); u["cpu"] != nil || u["gpu"] != 50.0 {
		t.Errorf("bob usage %v", u)
	}
	for _, user := range []string{"carol", "nobody"} {
		wantError(t, do(t, h, http.MethodGet, "/api/v1/quotas/"+user, userToken), http.StatusNotFound)
	}
}

func TestQuotaPlainKeysAndRounding(t *testing.T) {
	qt := quota("dave", "q", corev1.ResourceList{corev1.ResourceCPU: q("3"), corev1.ResourceMemory: q("3Gi")},
		corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("0")})
	h, _ := testServer(t, []runtime.Object{qt}...)
	var got Quota
	get(t, h, "/api/v1/quotas/dave", http.StatusOK, &got)
	if *got.Usage.CPU != 33.3 || *got.Usage.Memory != 0 || got.Usage.GPU != nil || *got.Hard.CPU != 3 {
		t.Errorf("dave: %s", dump(got))
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
