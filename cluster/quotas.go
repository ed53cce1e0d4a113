package cluster

import (
	"context"
	"fmt"
	"sort"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// QuotaList is every gpuctl quota, by namespace and name: the answer of GET /api/v1/quotas.
type QuotaList struct {
	Items []Quota `json:"items"`
}

// Quota is one user's quota, and the answer of GET /api/v1/quotas/{user}: a ResourceQuota
// labelled g8s.host/quota in the user's namespace (queueing: resourcequota), or the team's
// Kueue ClusterQueue labelled g8s.host/quota and g8s.host/managed-by=gpuctl, named as the
// namespace (queueing: kueue), which has Queue.
type Quota struct {
	// User is the user, whose namespace has the same name.
	User      string `json:"user"`
	Namespace string `json:"namespace"`
	// Name is the ResourceQuota's name, the quota file's metadata.name (for a ClusterQueue,
	// its g8s.host/quota label: the quota file's metadata.name too).
	Name string `json:"name"`
	// Hard is the limit; a null resource is not limited. For a ClusterQueue, the sum of its
	// nominal quotas over its pools (a team may use more by borrowing).
	Hard QuotaResources `json:"hard"`
	// Used is what the namespace's pods request, as the API server counts it: only for the
	// resources that Hard limits, null for the others. For a ClusterQueue, what its admitted
	// workloads reserve, summed over its pools, borrowed quota included.
	Used QuotaResources `json:"used"`
	// Usage is Used/Hard in percent, one decimal; null where there is no limit.
	Usage QuotaUsage `json:"usage"`
	// Queue is the team's Kueue ClusterQueue, by pool; nil (left out) for a ResourceQuota.
	Queue *QuotaQueue `json:"queue,omitempty"`
	// Jobs is the use by job: what the unfinished pods of each gpuctl job of the namespace
	// request, by job id, and a last item with JobID "" for the pods of no gpuctl job when
	// there are any. Set by Quota (one user's quota), left out by Quotas.
	Jobs []QuotaJob `json:"jobs,omitempty"`
}

// QuotaJob is what one job's unfinished pods request, as the quota counts them.
type QuotaJob struct {
	JobID  string  `json:"jobId"`
	Pods   int     `json:"pods"`
	GPU    int64   `json:"gpu"`
	CPU    float64 `json:"cpu"`
	Memory string  `json:"memory"`
}

// QuotaResources are the requested CPU (cores), memory (a quantity such as "20Gi") and GPUs.
type QuotaResources struct {
	CPU    *float64 `json:"cpu"`
	Memory *string  `json:"memory"`
	GPU    *int64   `json:"gpu"`
}

// QuotaUsage are percentages of a quota's limits.
type QuotaUsage struct {
	CPU    *float64 `json:"cpu"`
	Memory *float64 `json:"memory"`
	GPU    *float64 `json:"gpu"`
}

// quotaKeys are the ResourceQuota keys of each resource, preferred first ("cpu" in a quota
// means requests.cpu). GPUs are counted only as requests.nvidia.com/gpu.
var quotaKeys = struct{ cpu, memory, gpu []corev1.ResourceName }{
	cpu:    []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourceCPU},
	memory: []corev1.ResourceName{corev1.ResourceRequestsMemory, corev1.ResourceMemory},
	gpu:    []corev1.ResourceName{keys.QuotaRequestsGPU},
}

// Quotas lists gpuctl's quotas in all namespaces, by namespace and name.
func (r *Reader) Quotas(ctx context.Context) (QuotaList, error) {
	qs, err := r.quotas(ctx, metav1.NamespaceAll)
	if err != nil {
		return QuotaList{}, err
	}
	return QuotaList{Items: qs}, nil
}

// Quota reads a user's quota: the first by name of gpuctl's quotas in the user's namespace.
// A user without one is a *NotFoundError.
func (r *Reader) Quota(ctx context.Context, user string) (Quota, error) {
	qs, err := r.quotas(ctx, user)
	if err != nil {
		return Quota{}, fmt.Errorf("quota of %s: %w", user, err)
	}
	if len(qs) == 0 {
		return Quota{}, noQuota(user)
	}
	q := qs[0]
	if q.Jobs, err = r.quotaJobs(ctx, user); err != nil {
		return Quota{}, fmt.Errorf("quota of %s: %w", user, err)
	}
	return q, nil
}

// quotaJobs sums the requests of the unfinished pods of a namespace by job, as the quota
// counts them (a pod counts from its creation, scheduled or not).
func (r *Reader) quotaJobs(ctx context.Context, namespace string) ([]QuotaJob, error) {
	pods, err := r.ObjectSource().Pods(ctx, namespace, labels.Everything(), nil)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	sums := map[string]*requests{}
	counts := map[string]int{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		id := podJobID(p)
		if sums[id] == nil {
			sums[id] = &requests{}
		}
		sums[id].add(requestsOf(&p.Spec))
		counts[id]++
	}
	var out []QuotaJob // none: left out of the JSON, as in the list
	for id, req := range sums {
		out = append(out, QuotaJob{JobID: id, Pods: counts[id], GPU: req.gpu, CPU: cores(req.cpu), Memory: req.memory.String()})
	}
	sort.Slice(out, func(i, j int) bool { // by id, the pods of no job last
		a, b := out[i].JobID, out[j].JobID
		if (a == "") != (b == "") {
			return b == ""
		}
		return a < b
	})
	return out, nil
}

// noQuota is the error of a user without a gpuctl quota.
func noQuota(user string) *NotFoundError {
	return &NotFoundError{Kind: "user", Name: user, Hint: fmt.Sprintf(": no gpuctl quota in namespace %q", user)}
}

// quotas lists gpuctl's quotas in a namespace ("" for all): its ResourceQuotas and the
// ClusterQueues of its teams, by namespace, a ClusterQueue first, then by name.
func (r *Reader) quotas(ctx context.Context, namespace string) ([]Quota, error) {
	list, err := r.ObjectSource().ResourceQuotas(ctx, namespace, keys.QuotaSelector)
	if err != nil {
		return nil, fmt.Errorf("list resourcequotas: %w", err)
	}
	out, err := r.queueQuotas(ctx, namespace)
	if err != nil {
		return nil, err
	}
	for _, q := range list {
		out = append(out, quotaOf(q))
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Namespace != b.Namespace:
			return a.Namespace < b.Namespace
		case (a.Queue == nil) != (b.Queue == nil):
			return a.Queue != nil
		}
		return a.Name < b.Name
	})
	return out, nil
}

func quotaOf(q *corev1.ResourceQuota) Quota {
	out := Quota{User: q.Namespace, Namespace: q.Namespace, Name: q.Name}
	hard, used := q.Spec.Hard, q.Status.Used
	for res, names := range map[corev1.ResourceName][]corev1.ResourceName{
		corev1.ResourceCPU: quotaKeys.cpu, corev1.ResourceMemory: quotaKeys.memory, keys.ResourceGPU: quotaKeys.gpu} {
		if h, ok := lookup(hard, names); ok {
			u, _ := lookup(used, names)
			setUse(&out.Hard, &out.Used, &out.Usage, res, h, u)
		}
	}
	return out
}

// set sets the field of a resource (cpu, memory or nvidia.com/gpu; others are left out) to q.
func (r *QuotaResources) set(res corev1.ResourceName, q resource.Quantity) {
	switch res {
	case corev1.ResourceCPU:
		r.CPU = ptr(cores(q))
	case corev1.ResourceMemory:
		r.Memory = ptr(q.String())
	case keys.ResourceGPU:
		r.GPU = ptr(q.Value())
	}
}

// setUse sets a resource's limit h, its use u and their percentage.
func setUse(hard, used *QuotaResources, usage *QuotaUsage, res corev1.ResourceName, h, u resource.Quantity) {
	hard.set(res, h)
	used.set(res, u)
	switch res {
	case corev1.ResourceCPU:
		usage.CPU = percent(float64(u.MilliValue()), float64(h.MilliValue()))
	case corev1.ResourceMemory:
		usage.Memory = percent(u.AsApproximateFloat64(), h.AsApproximateFloat64())
	case keys.ResourceGPU:
		usage.GPU = percent(float64(u.Value()), float64(h.Value()))
	}
}

// lookup returns the first of the names that the list has.
func lookup(l corev1.ResourceList, names []corev1.ResourceName) (resource.Quantity, bool) {
	for _, n := range names {
		if q, ok := l[n]; ok {
			return q, true
		}
	}
	return resource.Quantity{}, false
}

func ptr[T any](v T) *T { return &v }
