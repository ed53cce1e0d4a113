package cluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kueueClusterQueue is the part of a Kueue ClusterQueue (kueue.x-k8s.io/v1beta2) the model
// reads: the quota of each flavor for a job's queue state (queues) and for a team's quota
// (quotaOfClusterQueue). Decode it with fromUnstructured.
type kueueClusterQueue struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		CohortName     string `json:"cohortName"`
		ResourceGroups []struct {
			Flavors []struct {
				Name      string               `json:"name"`
				Resources []kueueResourceQuota `json:"resources"`
			} `json:"flavors"`
		} `json:"resourceGroups"`
	} `json:"spec"`
	Status struct {
		FlavorsReservation []struct {
			Name      string `json:"name"`
			Resources []struct {
				Name     string            `json:"name"`
				Total    resource.Quantity `json:"total"`
				Borrowed resource.Quantity `json:"borrowed"`
			} `json:"resources"`
		} `json:"flavorsReservation"`
		PendingWorkloads  int32 `json:"pendingWorkloads"`
		AdmittedWorkloads int32 `json:"admittedWorkloads"`
	} `json:"status"`
}

// kueueResourceQuota is a ClusterQueue's quota of one resource in one flavor; a nil limit is
// not set (no limit).
type kueueResourceQuota struct {
	Name           string             `json:"name"`
	NominalQuota   resource.Quantity  `json:"nominalQuota"`
	BorrowingLimit *resource.Quantity `json:"borrowingLimit"`
	LendingLimit   *resource.Quantity `json:"lendingLimit"`
}

// flavors are the names of the ClusterQueue's flavors, in the order of its resource groups.
func (c *kueueClusterQueue) flavors() []string {
	var out []string
	for _, g := range c.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			out = append(out, f.Name)
		}
	}
	return out
}

// quota is the ClusterQueue's quota of a resource in a flavor, and whether it has one.
func (c *kueueClusterQueue) quota(flavor string, res corev1.ResourceName) (kueueResourceQuota, bool) {
	for _, g := range c.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			if f.Name != flavor {
				continue
			}
			for _, r := range f.Resources {
				if r.Name == string(res) {
					return r, true
				}
			}
		}
	}
	return kueueResourceQuota{}, false
}

// nominal is the ClusterQueue's nominal quota of a resource in a flavor, and its lending limit.
func (c *kueueClusterQueue) nominal(flavor string, res corev1.ResourceName) (resource.Quantity, *resource.Quantity) {
	q, _ := c.quota(flavor, res)
	return q.NominalQuota, q.LendingLimit
}

// reserved is what the ClusterQueue has reserved of a resource in a flavor, and how much of
// that it borrowed.
func (c *kueueClusterQueue) reserved(flavor string, res corev1.ResourceName) (total, borrowed resource.Quantity) {
	for _, f := range c.Status.FlavorsReservation {
		if f.Name != flavor {
			continue
		}
		for _, r := range f.Resources {
			if r.Name == string(res) {
				return r.Total, r.Borrowed
			}
		}
	}
	return total, borrowed
}
