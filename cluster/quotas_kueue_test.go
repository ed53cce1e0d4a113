package cluster

import (
	"context"
	"reflect"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// teamQueue is a team's ClusterQueue as gpuctl renders it (labels g8s.host/quota and
// g8s.host/managed-by): 8 GPUs, 64 CPU and 256Gi in training-pool, where it may borrow 4
// GPUs and lends at most 2, and 2 GPUs in default; it has reserved 12 GPUs in training-pool
// (4 borrowed) and 1 in default, with 2 workloads pending and 3 admitted.
func teamQueue(name string, labels map[string]any) *unstructured.Unstructured {
	res := func(n, nominal string, limits ...string) map[string]any {
		m := map[string]any{"name": n, "nominalQuota": nominal}
		if len(limits) == 2 {
			m["borrowingLimit"], m["lendingLimit"] = limits[0], limits[1]
		}
		return m
	}
	used := func(n, total, borrowed string) map[string]any {
		return map[string]any{"name": n, "total": total, "borrowed": borrowed}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": keys.KueueGroup + "/" + keys.KueueVersion, "kind": "ClusterQueue",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{"cohortName": keys.KueueCohort, "resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", "memory", keys.ResourceGPU},
			"flavors": []any{
				map[string]any{"name": "training-pool", "resources": []any{res("cpu", "64"), res("memory", "256Gi"), res(keys.ResourceGPU, "8", "4", "2")}},
				map[string]any{"name": keys.DefaultPool, "resources": []any{res("cpu", "8"), res("memory", "32Gi"), res(keys.ResourceGPU, "2")}},
			}}}},
		"status": map[string]any{"pendingWorkloads": int64(2), "admittedWorkloads": int64(3), "flavorsReservation": []any{
			map[string]any{"name": "training-pool", "resources": []any{used("cpu", "48", "0"), used("memory", "128Gi", "0"), used(keys.ResourceGPU, "12", "4")}},
			map[string]any{"name": keys.DefaultPool, "resources": []any{used("cpu", "2", "0"), used("memory", "0", "0"), used(keys.ResourceGPU, "1", "0")}},
		}},
	}}
}

// gpuctlLabels are the labels gpuctl renders on a team's ClusterQueue.
var gpuctlLabels = map[string]any{keys.Quota: "team-quota", keys.ManagedBy: keys.ManagedByValue}

// A gpuctl ClusterQueue is a team's quota by pool, with its limits and workloads; the team's
// totals are the sums over its pools. ClusterQueues not gpuctl's are left out.
func TestQuotaOfClusterQueue(t *testing.T) {
	cqs := []*unstructured.Unstructured{
		teamQueue("alice", gpuctlLabels),
		teamQueue("by-hand", nil),
		teamQueue("other-tool", map[string]any{keys.Quota: "q", keys.ManagedBy: "someone-else"}),
	}
	got := clusterQueueQuotas(cqs, "")
	want := []Quota{{User: "alice", Namespace: "alice", Name: "team-quota",
		Hard:  QuotaResources{CPU: ptr(72.0), Memory: ptr("288Gi"), GPU: ptr[int64](10)},
		Used:  QuotaResources{CPU: ptr(50.0), Memory: ptr("128Gi"), GPU: ptr[int64](13)},
		Usage: QuotaUsage{CPU: ptr(69.4), Memory: ptr(44.4), GPU: ptr(130.0)},
		Queue: &QuotaQueue{ClusterQueue: "alice", Cohort: keys.KueueCohort, Pending: 2, Admitted: 3, Pools: []QuotaPool{
			{Pool: "training-pool",
				Nominal:        QuotaResources{CPU: ptr(64.0), Memory: ptr("256Gi"), GPU: ptr[int64](8)},
				Used:           QuotaResources{CPU: ptr(48.0), Memory: ptr("128Gi"), GPU: ptr[int64](12)},
				Usage:          QuotaUsage{CPU: ptr(75.0), Memory: ptr(50.0), GPU: ptr(150.0)},
				Borrowed:       QuotaResources{CPU: ptr(0.0), Memory: ptr("0"), GPU: ptr[int64](4)},
				BorrowingLimit: QuotaResources{GPU: ptr[int64](4)},
				LendingLimit:   QuotaResources{GPU: ptr[int64](2)}},
			{Pool: keys.DefaultPool,
				Nominal:  QuotaResources{CPU: ptr(8.0), Memory: ptr("32Gi"), GPU: ptr[int64](2)},
				Used:     QuotaResources{CPU: ptr(2.0), Memory: ptr("0"), GPU: ptr[int64](1)},
				Usage:    QuotaUsage{CPU: ptr(25.0), Memory: ptr(0.0), GPU: ptr(50.0)},
				Borrowed: QuotaResources{CPU: ptr(0.0), Memory: ptr("0"), GPU: ptr[int64](0)}},
		}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("quotas:\n got %s\nwant %s", dump(got), dump(want))
	}
	if got := clusterQueueQuotas(cqs, "bob"); len(got) != 0 {
		t.Errorf("bob's quotas: %s", dump(got))
	}
}

// kueueObjects answers the reader's lists from the fake clientset, and its ClusterQueues (or
// err) as the API server would.
type kueueObjects struct {
	APIObjects
	cqs []*unstructured.Unstructured
	err error
}

func (k kueueObjects) KueueClusterQueues(context.Context) ([]*unstructured.Unstructured, error) {
	return k.cqs, k.err
}

// The quotas of a cluster with Kueue: the ClusterQueues' beside the ResourceQuotas', a team's
// ClusterQueue first; a team's scope sees only its own. Without Kueue's API, or without the
// right to list ClusterQueues, only the ResourceQuotas.
func TestQuotasWithClusterQueues(t *testing.T) {
	objs := kueueObjects{APIObjects: APIObjects{Client: fake.NewClientset(fx.Objects()...)},
		cqs: []*unstructured.Unstructured{teamQueue("alice", gpuctlLabels), teamQueue("erin", gpuctlLabels), teamQueue("by-hand", nil)}}
	r := &Reader{Objects: objs}
	list, err := r.Quotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, q := range list.Items {
		order = append(order, q.Namespace+":"+map[bool]string{true: "ClusterQueue", false: "ResourceQuota"}[q.Queue != nil])
	}
	if want := []string{"alice:ClusterQueue", "alice:ResourceQuota", "bob:ResourceQuota", "erin:ClusterQueue"}; !reflect.DeepEqual(order, want) {
		t.Errorf("quotas %v, want %v", order, want)
	}
	erin, err := r.Quota(ctx, "erin")
	if err != nil {
		t.Fatal(err)
	}
	if erin.Queue == nil || len(erin.Queue.Pools) != 2 || erin.Jobs != nil {
		t.Errorf("erin: %s", dump(erin))
	}
	if alice, err := r.Quota(ctx, "alice"); err != nil || alice.Queue == nil || len(alice.Jobs) == 0 {
		t.Errorf("alice (%v): %s", err, dump(alice))
	}
	scoped, err := Scope(r, []string{"erin"}).Quotas(ctx)
	if err != nil || len(scoped.Items) != 1 || scoped.Items[0].User != "erin" {
		t.Errorf("erin's scope (%v): %s", err, dump(scoped))
	}
	if _, err := Scope(r, []string{"erin"}).Quota(ctx, "alice"); err == nil {
		t.Error("erin's scope reads alice's ClusterQueue")
	}

	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: keys.KueueGroup, Resource: "clusterqueues"}, "", nil)
	for name, err := range map[string]error{"no Kueue": ErrNoKueue, "forbidden": forbidden} {
		objs.err = err
		list, got := (&Reader{Objects: objs}).Quotas(ctx)
		if got != nil || len(list.Items) != 2 || list.Items[0].Queue != nil || list.Items[1].Queue != nil {
			t.Errorf("%s: %v %s", name, got, dump(list))
		}
	}
}
