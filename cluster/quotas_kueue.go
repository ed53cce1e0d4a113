package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// QuotaQueue is a team's quota as its Kueue ClusterQueue holds it (queueing: kueue): its
// quota in each pool (Kueue's ResourceFlavor) and its workloads.
type QuotaQueue struct {
	// ClusterQueue is the ClusterQueue's name, the team's namespace; Cohort its cohort, whose
	// ClusterQueues lend each other their idle quota.
	ClusterQueue string `json:"clusterQueue"`
	Cohort       string `json:"cohort,omitempty"`
	// Pending counts the workloads that wait in the queue, Admitted those admitted (Kueue's
	// status.pendingWorkloads and status.admittedWorkloads).
	Pending  int32 `json:"pending"`
	Admitted int32 `json:"admitted"`
	// Pools are the team's quotas by pool, in the ClusterQueue's order.
	Pools []QuotaPool `json:"pools"`
}

// QuotaPool is a team's quota in one pool: its nominal quota, what it uses (reserved by its
// admitted workloads, borrowed quota included: Used may exceed Nominal) and how much of that
// it borrowed from the cohort, and its limits. Resources that the ClusterQueue does not cover
// are null.
type QuotaPool struct {
	// Pool is the pool, the ResourceFlavor's name (default: the nodes in no pool).
	Pool    string         `json:"pool"`
	Nominal QuotaResources `json:"nominal"`
	Used    QuotaResources `json:"used"`
	// Usage is Used/Nominal in percent, one decimal; null where the nominal quota is 0.
	Usage    QuotaUsage     `json:"usage"`
	Borrowed QuotaResources `json:"borrowed"`
	// BorrowingLimit is how much the team may borrow beyond Nominal, LendingLimit how much of
	// its idle quota the other teams may borrow; null where there is no limit.
	BorrowingLimit QuotaResources `json:"borrowingLimit"`
	LendingLimit   QuotaResources `json:"lendingLimit"`
}

// quotaResourceNames are the resources a quota counts.
var quotaResourceNames = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, keys.ResourceGPU}

// queueQuotaSelector selects gpuctl's ClusterQueues: those labelled g8s.host/quota and
// g8s.host/managed-by=gpuctl.
var queueQuotaSelector = func() labels.Selector {
	quota, err := labels.NewRequirement(keys.Quota, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	managed, err := labels.NewRequirement(keys.ManagedBy, selection.Equals, []string{keys.ManagedByValue})
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*quota, *managed)
}()

// queueQuotas lists the quotas of gpuctl's ClusterQueues, that of namespace only unless it is
// "": none (and no error) when the cluster serves no Kueue API or the credentials may not list
// ClusterQueues.
func (r *Reader) queueQuotas(ctx context.Context, namespace string) ([]Quota, error) {
	out := []Quota{}
	if r.kueueAbsent() {
		return out, nil
	}
	list, err := r.ObjectSource().KueueClusterQueues(ctx)
	switch {
	case errors.Is(err, ErrNoKueue):
		r.markNoKueue()
		return out, nil
	case apierrors.IsForbidden(err):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("list clusterqueues.%s: %w", keys.KueueGroup, err)
	}
	return append(out, clusterQueueQuotas(list, namespace)...), nil
}

// clusterQueueQuotas are the quotas of gpuctl's ClusterQueues among cqs, that of namespace
// only unless it is ""; a ClusterQueue that does not decode is left out.
func clusterQueueQuotas(cqs []*unstructured.Unstructured, namespace string) []Quota {
	var out []Quota
	for _, u := range cqs {
		if (namespace != "" && u.GetName() != namespace) || !queueQuotaSelector.Matches(labels.Set(u.GetLabels())) {
			continue
		}
		if cq, err := fromUnstructured[kueueClusterQueue](u); err == nil {
			out = append(out, quotaOfClusterQueue(cq))
		}
	}
	return out
}

// quotaOfClusterQueue is a team's quota from its ClusterQueue: each pool's, and their sums as
// the team's Hard and Used.
func quotaOfClusterQueue(cq *kueueClusterQueue) Quota {
	name := cq.Metadata.Name
	q := Quota{User: name, Namespace: name, Name: cq.Metadata.Labels[keys.Quota],
		Queue: &QuotaQueue{ClusterQueue: name, Cohort: cq.Spec.CohortName, Pending: cq.Status.PendingWorkloads,
			Admitted: cq.Status.AdmittedWorkloads, Pools: []QuotaPool{}}}
	hard, used := map[corev1.ResourceName]*resource.Quantity{}, map[corev1.ResourceName]*resource.Quantity{}
	for _, flavor := range cq.flavors() {
		p := QuotaPool{Pool: flavor}
		for _, res := range quotaResourceNames {
			rq, ok := cq.quota(flavor, res)
			if !ok {
				continue
			}
			total, borrowed := cq.reserved(flavor, res)
			setUse(&p.Nominal, &p.Used, &p.Usage, res, rq.NominalQuota, total)
			p.Borrowed.set(res, borrowed)
			if rq.BorrowingLimit != nil {
				p.BorrowingLimit.set(res, *rq.BorrowingLimit)
			}
			if rq.LendingLimit != nil {
				p.LendingLimit.set(res, *rq.LendingLimit)
			}
			addTo(hard, res, rq.NominalQuota)
			addTo(used, res, total)
		}
		q.Queue.Pools = append(q.Queue.Pools, p)
	}
	for res, h := range hard {
		setUse(&q.Hard, &q.Used, &q.Usage, res, *h, *used[res])
	}
	return q
}

// addTo adds v to the sum of res in sums.
func addTo(sums map[corev1.ResourceName]*resource.Quantity, res corev1.ResourceName, v resource.Quantity) {
	if sums[res] == nil {
		sums[res] = &resource.Quantity{}
	}
	sums[res].Add(v)
}
