package detector

import (
	"context"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// workloadFinished says how a pod or a Job ended ("completed" or "failed"), or "" while it
// runs (and for other kinds).
func workloadFinished(obj any) string {
	switch o := obj.(type) {
	case *corev1.Pod:
		switch o.Status.Phase {
		case corev1.PodSucceeded:
			return "completed"
		case corev1.PodFailed:
			return "failed"
		}
	case *batchv1.Job:
		for _, c := range o.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return "completed"
			case batchv1.JobFailed:
				return "failed"
			}
		}
	}
	return ""
}

// workloadGPUs is the number of GPUs a workload holds or will hold (object.TypedGPUs): pods
// that have not terminated, Jobs that have not finished, Deployments and StatefulSets by
// their replicas.
func workloadGPUs(obj any) int64 {
	o, ok := obj.(runtime.Object)
	if !ok || workloadFinished(obj) != "" {
		return 0
	}
	return object.TypedGPUs(o)
}

// gpusOf reads the GPUs that slim recorded on a cached workload.
func gpusOf(obj any) int64 {
	m, err := metaOf(obj)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(m.GetAnnotations()[gpusKey], 10, 64)
	return n
}

// workloadResources are the resources of the workload kinds looked at for shadows.
var workloadResources = map[string]schema.GroupVersionResource{
	"Pod": {Version: "v1", Resource: "pods"}, "Job": {Group: "batch", Version: "v1", Resource: "jobs"},
	"Deployment":  {Group: "apps", Version: "v1", Resource: "deployments"},
	"StatefulSet": {Group: "apps", Version: "v1", Resource: "statefulsets"},
}

// workloadGK is the group-kind of a workload kind of workloadResources.
func workloadGK(kind string) schema.GroupKind {
	return schema.GroupKind{Group: workloadResources[kind].Group, Kind: kind}
}

// evalShadow decides whether one workload (key kind/namespace/name) is a shadow: it requests
// GPUs, gpuctl did not apply it, nothing gpuctl applied owns it, and it runs in a namespace
// gpuctl manages (or, for a pod, on a pool node).
func (d *Detector) evalShadow(ctx context.Context, ds *desiredState, key string) error {
	kind, rest, _ := strings.Cut(key, "/")
	ns, name, _ := strings.Cut(rest, "/")
	ref := object.Ref{APIVersion: workloadResources[kind].GroupVersion().String(), Kind: kind, Namespace: ns, Name: name}
	itemKey := drift.Item{Category: drift.Shadow, Object: ref}.Key()
	var obj any
	found := false
	for _, inf := range d.w.workloads[kind] {
		var err error
		if obj, found, err = inf.GetIndexer().GetByKey(ns + "/" + name); err != nil {
			return err
		} else if found {
			break
		}
	}
	if !found {
		// The shadow watches leave out what carries gpuctl's labels; the metadata watches hold
		// it. Labels are only a claim: what is not in Git is looked at all the same.
		gk := workloadGK(kind)
		version, member := d.w.memberVersion(gk, ns, name)
		switch {
		case !member:
			d.resolve(itemKey, "", "deleted")
			return nil
		case ds.objects[object.KeyOf(gk, ns, name)] != nil:
			d.resolve(itemKey, "", "now in Git")
			return nil
		}
		var err error
		if obj, err = d.readLabelled(ctx, kind, ns, name, version); apierrors.IsNotFound(err) {
			d.resolve(itemKey, "", "deleted")
			return nil
		} else if err != nil {
			return err
		}
	}
	m, err := metaOf(obj)
	if err != nil {
		return err
	}
	gpus := gpusOf(obj)
	why, shadow := d.isShadow(ds, kind, m, obj, gpus)
	if !shadow {
		d.resolve(itemKey, "", why)
		return nil
	}
	it := drift.Item{Object: ref, Category: drift.Shadow, GPUs: gpus,
		Message: "requests " + humanize.Plural(gpus, "GPU") + " " + why + " and is not in Git"}
	if mf := m.GetManagedFields(); len(mf) > 0 {
		it.Manager = mf[0].Manager
		if mf[0].Time != nil {
			t := mf[0].Time.UTC()
			it.Changed = &t
		}
	}
	if it.Changed == nil {
		t := m.GetCreationTimestamp().UTC()
		it.Changed = &t
	}
	labelled := ours(m, ds.partOf) // and not in Git (isShadow): forged, or a prune it was told not to make
	if labelled {
		it.Message += "; it carries gpuctl's labels, which gpuctl did not apply (or keeps a prune from deleting it)"
	}
	if d.opts.Mode == drift.ModeCorrect && d.opts.DeleteShadow && !labelled { // what carries gpuctl's labels is the engine's to prune
		it.Correction = "delete"
		d.set(it)
		return d.deleteShadow(ctx, kind, m, it)
	}
	d.set(it)
	return nil
}

// isShadow applies the shadow rules to a workload and says where it runs, or, when it is not
// a shadow, why not (the reason a resolved entry gives: "completed", "now in Git", ...).
func (d *Detector) isShadow(ds *desiredState, kind string, m metav1.Object, obj any, gpus int64) (string, bool) {
	switch {
	case gpus == 0:
		if f := m.GetAnnotations()[finishedKey]; f != "" {
			return f, false
		}
		return "no longer requests GPUs", false
	case ignored(m.GetAnnotations()):
		return whyIgnored, false
	case ds.multiKueueWorker && keys.MultiKueueCopy(workloadGK(kind).Group, kind, m.GetLabels()):
		return "a MultiKueue copy of a job of the manager cluster, in Git there", false
	case ds.held[m.GetNamespace()] && ours(m, ds.partOf):
		return "held: the files of namespace " + m.GetNamespace() + " have errors, and its objects stay as they were", false
	case ours(m, ds.partOf) && ds.objects[object.KeyOf(workloadGK(kind), m.GetNamespace(), m.GetName())] != nil:
		return "now in Git", false
	}
	owner := metav1.GetControllerOf(m)
	if owner != nil && d.w.managedOwner(m.GetNamespace(), owner) {
		return "now in Git (made by " + owner.Kind + " " + owner.Name + ")", false
	}
	inManaged := ds.namespaces[m.GetNamespace()]
	notManaged := "namespace " + m.GetNamespace() + " no longer managed"
	if kind != "Pod" {
		if !inManaged {
			return notManaged, false
		}
		return "in namespace " + m.GetNamespace() + ", which gpuctl manages", true
	}
	// A pod made by a Job, ReplicaSet or StatefulSet of a managed namespace is judged
	// through its workload.
	if owner != nil && inManaged {
		switch owner.Kind {
		case "Job", "ReplicaSet", "StatefulSet":
			return "judged through its " + owner.Kind, false
		}
	}
	node := m.GetAnnotations()[nodeKey]
	if n, ok := ds.nodes[node]; ok && node != "" {
		where := "on node " + node + " of pool " + n.pool
		if owner != nil {
			where += " (made by " + owner.Kind + " " + owner.Name + ")"
		}
		return where, true
	}
	if !inManaged {
		return notManaged, false
	}
	return "in namespace " + m.GetNamespace() + ", which gpuctl manages", true
}

func (d *Detector) hasShadow(key string) bool {
	kind, rest, _ := strings.Cut(key, "/")
	ns, name, _ := strings.Cut(rest, "/")
	k := drift.Item{Category: drift.Shadow, Object: object.Ref{Kind: kind, Namespace: ns, Name: name}}.Key()
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.items[k]
	return ok
}

// getWorkload reads a workload that the shadow watches leave out, trimmed as they trim theirs.
func (d *Detector) getWorkload(ctx context.Context, kind, ns, name string) (any, error) {
	var obj any
	var err error
	switch kind {
	case "Job":
		obj, err = d.opts.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	case "Deployment":
		obj, err = d.opts.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	case "StatefulSet":
		obj, err = d.opts.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	default:
		return nil, apierrors.NewNotFound(workloadResources[kind].GroupResource(), name)
	}
	if err != nil {
		return nil, err
	}
	return slim(obj)
}

// shadowKeys lists the workloads in the caches that request GPUs, for a full pass.
func (d *Detector) shadowKeys() []string {
	var out []string
	for kind, infs := range d.w.workloads {
		for _, inf := range infs {
			for _, obj := range inf.GetStore().List() {
				if gpusOf(obj) == 0 {
					continue
				}
				if m, err := metaOf(obj); err == nil {
					out = append(out, "s:"+kind+"/"+m.GetNamespace()+"/"+m.GetName())
				}
			}
		}
	}
	return out
}
