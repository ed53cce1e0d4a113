package render

import (
	"path/filepath"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// With queueing kueue (Config.Queueing), the teams' quotas become Kueue's objects, built
// here as unstructured objects of keys.KueueGroup/keys.KueueVersion: a ResourceFlavor per
// pool and one for the nodes in no pool, a ClusterQueue per team in the cohort
// keys.KueueCohort, a LocalQueue keys.KueueLocalQueue in each team namespace, and a
// WorkloadPriorityClass per gpuctl priority. docs/format.md §9 describes the mapping.

// kueueAPIVersion is the apiVersion of the Kueue objects gpuctl renders.
const kueueAPIVersion = keys.KueueGroup + "/" + keys.KueueVersion

// quotaResources are the resources a ClusterQueue covers, each with the field of a quota
// entry that sets it.
var quotaResources = []struct{ name, field string }{
	{string(corev1.ResourceCPU), "cpu"},
	{string(corev1.ResourceMemory), "memory"},
	{keys.ResourceGPU, "gpu"},
}

// values are cpu, memory and gpu in quotaResources order.
func (r QuotaResources) values() [3]resource.Quantity {
	return [3]resource.Quantity{r.CPU, r.Memory, *resource.NewQuantity(int64(r.GPU), resource.DecimalSI)}
}

// resourceQuota is a team's quota of one resource in one flavor; nil limits are not set.
type resourceQuota struct {
	nominal            resource.Quantity
	borrowing, lending *resource.Quantity
}

// flavorQuotas resolves a team's quota in each flavor (pool, or keys.DefaultPool), in
// quotaResources order. Without pools every flavor gets the team's numbers; with pools a
// listed flavor gets its entry, each field it leaves out taking the team's, and an unlisted
// one gets 0 (it can still borrow). A limit not written is not set; a lending limit is at
// most the nominal quota (a team cannot lend what it does not have). has tells the fields
// written in the document; field is the team's path, users.<name>.
func flavorQuotas(u UserQuota, has func(string) bool, field string, flavors []string) map[string][]resourceQuota {
	team, teamBorrow, teamLend := u.values(), u.BorrowingLimit.values(), u.LendingLimit.values()
	entries := map[string]PoolQuota{}
	for _, p := range u.Pools {
		entries[p.Name] = p
	}
	perPool := has(field + ".pools")
	out := make(map[string][]resourceQuota, len(flavors))
	for _, f := range flavors {
		e, listed := entries[f]
		ef := field + ".pools." + f
		vals, borrow, lend := e.values(), e.BorrowingLimit.values(), e.LendingLimit.values()
		// pick is the entry's value of a field if it writes it, else the team's if it does.
		pick := func(sub string, i int, entry, teamVal [3]resource.Quantity) *resource.Quantity {
			name := quotaResources[i].field
			switch {
			case listed && has(ef+sub+name):
				return ptr(entry[i].DeepCopy())
			case has(field + sub + name):
				return ptr(teamVal[i].DeepCopy())
			}
			return nil
		}
		rqs := make([]resourceQuota, len(quotaResources))
		for i := range quotaResources {
			var rq resourceQuota
			switch n := pick(".", i, vals, team); {
			case perPool && !listed, n == nil:
				rq.nominal = *resource.NewQuantity(0, resource.DecimalSI)
			default:
				rq.nominal = *n
			}
			rq.borrowing = pick(".borrowingLimit.", i, borrow, teamBorrow)
			if rq.lending = pick(".lendingLimit.", i, lend, teamLend); rq.lending != nil && rq.lending.Cmp(rq.nominal) > 0 {
				rq.lending = ptr(rq.nominal.DeepCopy())
			}
			rqs[i] = rq
		}
		out[f] = rqs
	}
	return out
}

// kueueObject is a Kueue object with gpuctl's label and a source annotation.
func kueueObject(kind, namespace, name, source string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	l := map[string]any{keys.ManagedBy: keys.ManagedByValue}
	for k, v := range labels {
		l[k] = v
	}
	meta["labels"] = l
	meta["annotations"] = map[string]any{keys.Source: source}
	obj := map[string]any{"apiVersion": kueueAPIVersion, "kind": kind, "metadata": meta}
	for k, v := range spec {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

// resourceFlavor is the flavor of a pool: the nodes labelled with it. The flavor of
// keys.DefaultPool has no node labels: the nodes in no pool.
func resourceFlavor(pool, source string) *unstructured.Unstructured {
	spec := map[string]any{}
	if pool != keys.DefaultPool {
		spec["nodeLabels"] = map[string]any{keys.Pool: pool}
	}
	return kueueObject("ResourceFlavor", "", pool, source, nil, map[string]any{"spec": spec})
}

// workloadPriorityClasses are the Kueue classes of job.priority, named and valued as the
// PriorityClasses (priorityClasses), so that a higher job preempts borrowed capacity first.
func workloadPriorityClasses(source string) []*unstructured.Unstructured {
	classes := []struct {
		name, desc string
		value      int64
	}{
		{keys.PriorityClassHigh, "gpuctl priority high: admitted first; preempts lower work that borrows", keys.PriorityValueHigh},
		{keys.PriorityClassMedium, "gpuctl priority medium (the default)", keys.PriorityValueMedium},
		{keys.PriorityClassLow, "gpuctl priority low: admitted last, preempted first", keys.PriorityValueLow},
	}
	out := make([]*unstructured.Unstructured, 0, len(classes))
	for _, c := range classes {
		out = append(out, kueueObject("WorkloadPriorityClass", "", c.name, source, nil,
			map[string]any{"value": c.value, "description": c.desc}))
	}
	return out
}

// clusterQueue is a team's queue: its quota in every flavor, in the cohort, fed only by the
// team's namespace.
func clusterQueue(q *Quota, u UserQuota, source string, flavors []string, quotas map[string][]resourceQuota) *unstructured.Unstructured {
	covered := make([]any, len(quotaResources))
	for i, r := range quotaResources {
		covered[i] = r.name
	}
	fl := make([]any, 0, len(flavors))
	for _, f := range flavors {
		res := make([]any, len(quotaResources))
		for i, rq := range quotas[f] {
			m := map[string]any{"name": quotaResources[i].name, "nominalQuota": rq.nominal.String()}
			if rq.borrowing != nil {
				m["borrowingLimit"] = rq.borrowing.String()
			}
			if rq.lending != nil {
				m["lendingLimit"] = rq.lending.String()
			}
			res[i] = m
		}
		fl = append(fl, map[string]any{"name": f, "resources": res})
	}
	spec := map[string]any{
		"cohortName":        keys.KueueCohort,
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: u.Name}},
		"queueingStrategy":  "BestEffortFIFO",
		"resourceGroups":    []any{map[string]any{"coveredResources": covered, "flavors": fl}},
		"preemption": map[string]any{
			"reclaimWithinCohort": "Any",
			"borrowWithinCohort":  map[string]any{"policy": "LowerPriority"},
			"withinClusterQueue":  "LowerPriority",
		},
	}
	cq := kueueObject("ClusterQueue", "", u.Name, source, map[string]string{keys.Quota: q.Name}, map[string]any{"spec": spec})
	setDescription(cq, q.Description)
	return cq
}

// localQueue is the queue of a team's namespace, pointing at its ClusterQueue.
func localQueue(q *Quota, u UserQuota, source string) *unstructured.Unstructured {
	lq := kueueObject("LocalQueue", u.Name, keys.KueueLocalQueue, source, map[string]string{keys.Quota: q.Name},
		map[string]any{"spec": map[string]any{"clusterQueue": u.Name}})
	setDescription(lq, q.Description)
	return lq
}

// setDescription sets the description annotation, when there is a description.
func setDescription(u *unstructured.Unstructured, description string) {
	if description == "" {
		return
	}
	ann := u.GetAnnotations()
	ann[keys.Description] = description
	u.SetAnnotations(ann)
}

// kueueObjects renders the Kueue objects of the tree's teams: nothing without a team. The
// flavors are the pools in file order, then keys.DefaultPool.
func (st *run) kueueObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if !st.cfg.Kueue() || len(st.teams) == 0 {
		return objs
	}
	configFile := st.displayOf(filepath.Join(st.repo, keys.ConfigFile))
	var flavors []string
	for _, s := range st.sources {
		for _, doc := range s.docs {
			if doc.Pool != nil {
				flavors = append(flavors, doc.Pool.Name)
				objs = st.add(objs, resourceFlavor(doc.Pool.Name, s.rel), doc.File, doc.Pos)
			}
		}
	}
	flavors = append(flavors, keys.DefaultPool)
	objs = st.add(objs, resourceFlavor(keys.DefaultPool, keys.ConfigFile), configFile, Pos{})
	for _, o := range workloadPriorityClasses(keys.ConfigFile) {
		objs = st.add(objs, o, configFile, Pos{})
	}
	for _, s := range st.sources {
		for _, doc := range s.docs {
			if doc.Quota == nil {
				continue
			}
			for _, u := range doc.Quota.Users {
				if st.teams[u.Name] != doc {
					continue // a duplicate user, reported by validateAll
				}
				field := "users." + u.Name
				quotas := flavorQuotas(u, doc.Has, field, flavors)
				cq := clusterQueue(doc.Quota, u, s.rel, flavors, quotas)
				if st.multiKueueManager() {
					if err := withMultiKueueCheck(cq); err != nil {
						st.ds.errorf(doc.File, doc.At(field), field, "%s", err)
					}
				}
				for _, o := range []*unstructured.Unstructured{cq, localQueue(doc.Quota, u, s.rel)} {
					objs = st.add(objs, o, doc.File, doc.At(field))
				}
			}
		}
	}
	return objs
}

// queueLabels are the labels that put a workload of a team namespace in its LocalQueue
// with the WorkloadPriorityClass of its priority.
func queueLabels(priority string) map[string]string {
	return map[string]string{keys.KueueQueueName: keys.KueueLocalQueue, keys.KueuePriorityClass: priorityClassName(priority)}
}

// suspendQueuedJobs makes every Job and CronJob of a team namespace wait for Kueue, whoever
// wrote it (a training document, a plain manifest or kustomize output, a team's or the
// admin's): each starts suspended (a CronJob's Jobs too) and carries the team's queue label;
// Kueue admits a Job by un-suspending it, all its pods at once (docs/format.md §9.1). A Job written with
// `suspend: false` would otherwise be applied as such again by every sync and start before
// Kueue admits it; such a value is replaced, with a warning.
func (st *run) suspendQueuedJobs(objs []*unstructured.Unstructured) {
	if !st.cfg.Kueue() {
		return
	}
	for _, o := range objs {
		gv, kind := o.GroupVersionKind(), o.GetKind()
		if gv.Group != "batch" || (kind != "Job" && kind != "CronJob") || st.teams[o.GetNamespace()] == nil {
			continue
		}
		st.bodies.keepWhole(o) // written below
		specPath, labelsPath := []string{"spec"}, []string{"metadata", "labels"}
		if kind == "CronJob" {
			specPath, labelsPath = []string{"spec", "jobTemplate", "spec"}, []string{"spec", "jobTemplate", "metadata", "labels"}
		}
		// The spec may be shared with the render cache (sharedManifest): what is written is
		// copied first (ownMap).
		if labels, _, _ := unstructured.NestedStringMap(o.Object, labelsPath...); labels[keys.KueueQueueName] == "" {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[keys.KueueQueueName] = keys.KueueLocalQueue
			if parent, ok := ownMap(o.Object, labelsPath[:len(labelsPath)-1]...); ok {
				l := make(map[string]any, len(labels))
				for k, v := range labels {
					l[k] = v
				}
				parent["labels"] = l
			}
		}
		field := strings.Join(append(specPath, "suspend"), ".")
		if suspend, found, _ := unstructured.NestedBool(o.Object, append(specPath, "suspend")...); found && !suspend {
			file, p := st.origin(o)
			st.ds.warnf(file, p, field, "%s %s/%s: suspend false is rendered as true: with queueing kueue the Jobs of namespace %q start when Kueue admits them",
				kind, o.GetNamespace(), o.GetName(), o.GetNamespace())
		}
		if spec, ok := ownMap(o.Object, specPath...); ok {
			spec["suspend"] = true
		}
	}
}

// origin is the file and line an object was rendered from, for a diagnostic.
func (st *run) origin(o *unstructured.Unstructured) (string, Pos) {
	where := st.objSrc[object.RefOf(o)]
	if where.line > 0 {
		return where.file, Pos{Line: where.line, Column: 1}
	}
	return where.file, Pos{}
}
