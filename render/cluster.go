package render

import (
	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func managedLabels() map[string]string {
	return map[string]string{keys.ManagedBy: keys.ManagedByValue}
}

// priorityClasses are the three classes that job.priority selects.
func priorityClasses() []runtime.Object {
	never := corev1.PreemptNever
	classes := []struct {
		name, desc string
		value      int32
		policy     *corev1.PreemptionPolicy
	}{
		{keys.PriorityClassHigh, "gpuctl priority high: may preempt medium and low work", keys.PriorityValueHigh, nil},
		{keys.PriorityClassMedium, "gpuctl priority medium (the default)", keys.PriorityValueMedium, nil},
		{keys.PriorityClassLow, "gpuctl priority low: runs on spare capacity and never preempts", keys.PriorityValueLow, &never},
	}
	out := make([]runtime.Object, 0, len(classes))
	for _, c := range classes {
		out = append(out, &schedulingv1.PriorityClass{
			TypeMeta:         metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
			ObjectMeta:       metav1.ObjectMeta{Name: c.name, Labels: managedLabels()},
			Value:            c.value,
			Description:      c.desc,
			PreemptionPolicy: c.policy,
		})
	}
	return out
}

// buildPool renders a pool: label intents on its nodes (partial Node objects, applied with
// server-side apply, never created) and the pool's registry ConfigMap (see PoolRecord).
func buildPool(p *Pool, source, systemNamespace string) []runtime.Object {
	rec := PoolRecord{Name: p.Name, Description: p.Description, Nodes: make([]PoolRegistryEntry, 0, len(p.Nodes))}
	var out []runtime.Object
	for _, n := range p.Nodes {
		labels := map[string]string{keys.Pool: p.Name}
		e := PoolRegistryEntry{Name: n.Name}
		if n.GPUType != "" {
			e.GPUType = NormalizeGPUType(n.GPUType)
			labels[keys.GPUType] = e.GPUType
		}
		rec.Nodes = append(rec.Nodes, e)
		out = append(out, &corev1.Node{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
		})
	}
	return append(out, rec.ConfigMap(systemNamespace, source))
}

// buildQuota renders a Namespace for each user, and a ResourceQuota unless withQuota is false
// (with queueing kueue the team's ClusterQueue holds its quota, see kueueObjects).
func buildQuota(q *Quota, source string, has func(string) bool, withQuota bool) []runtime.Object {
	var out []runtime.Object
	for _, u := range q.Users {
		labels := managedLabels()
		labels[keys.Quota] = q.Name
		ann := map[string]string{keys.Source: source}
		if q.Description != "" {
			ann[keys.Description] = q.Description
		}
		hard := corev1.ResourceList{}
		if has("users." + u.Name + ".cpu") {
			hard[corev1.ResourceRequestsCPU] = u.CPU
		}
		if has("users." + u.Name + ".memory") {
			hard[corev1.ResourceRequestsMemory] = u.Memory
		}
		if has("users." + u.Name + ".gpu") {
			hard[keys.QuotaRequestsGPU] = *resource.NewQuantity(int64(u.GPU), resource.DecimalSI)
		}
		out = append(out, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: u.Name, Labels: labels, Annotations: ann},
		})
		if !withQuota {
			continue
		}
		out = append(out,
			&corev1.ResourceQuota{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
				ObjectMeta: metav1.ObjectMeta{Name: q.Name, Namespace: u.Name, Labels: labels, Annotations: ann},
				Spec:       corev1.ResourceQuotaSpec{Hard: hard},
			})
	}
	return out
}
