package cluster

import (
	"encoding/json"
	"reflect"
	"testing"

	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestQuotas(t *testing.T) {
	l, err := testReader(t).Quotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2 {
		t.Fatalf("%d quotas, want 2 (carol's is not gpuctl's)", len(l.Items))
	}
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

func TestQuota(t *testing.T) {
	r := testReader(t)
	got, err := r.Quota(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if got.User != "bob" || got.Usage.CPU != nil || got.Usage.Memory != nil || got.Usage.GPU == nil || *got.Usage.GPU != 50 {
		t.Errorf("bob: %s", dump(got))
	}
	// bob's unfinished pods: llm-1 (running) and llm-2 (pending, counted too, as the quota
	// does), and stray, which is no gpuctl job's, last.
	if want := []QuotaJob{{JobID: "bob.llm", Pods: 2, GPU: 2, CPU: 64, Memory: "256Gi"},
		{JobID: "", Pods: 1, GPU: 2, CPU: 32, Memory: "128Gi"}}; !reflect.DeepEqual(got.Jobs, want) {
		t.Errorf("bob's use by job: %s, want %s", dump(got.Jobs), dump(want))
	}
	for _, user := range []string{"carol", "nobody"} {
		_, err := r.Quota(ctx, user)
		wantNotFound(t, err, "user", user)
	}
}

func TestQuotaPlainKeysAndRounding(t *testing.T) {
	qt := fx.Quota("dave", "q", corev1.ResourceList{corev1.ResourceCPU: fx.Q("3"), corev1.ResourceMemory: fx.Q("3Gi")},
		corev1.ResourceList{corev1.ResourceCPU: fx.Q("1"), corev1.ResourceMemory: fx.Q("0")})
	got, err := testReader(t, []runtime.Object{qt}...).Quota(ctx, "dave")
	if err != nil {
		t.Fatal(err)
	}
	if *got.Usage.CPU != 33.3 || *got.Usage.Memory != 0 || got.Usage.GPU != nil || *got.Hard.CPU != 3 {
		t.Errorf("dave: %s", dump(got))
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
