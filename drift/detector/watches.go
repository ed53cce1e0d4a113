package detector

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// watches are the informers of the detector: one metadata-only informer per resource that
// gpuctl applies (selected by the inventory label), and trimmed typed informers of Nodes and
// of the workloads that may request GPUs.
type watches struct {
	d *Detector

	mu     sync.Mutex
	meta   map[schema.GroupVersionResource]*metaWatch
	partOf string
	// labelled are the workloads that carry gpuctl's labels and that Git does not declare, as
	// evalShadow last read them (readLabelled), by key kind/namespace/name.
	labelled map[string]labelledRead

	nodes cache.SharedIndexInformer
	// inventory watches the engine's inventory parent (a ConfigMap), for the engine's plans.
	inventory cache.SharedIndexInformer
	// workloads are the informers of the kinds that may request GPUs, by kind (of a kind's
	// workloads, each holds a part).
	workloads map[string][]cache.SharedIndexInformer
}

type metaWatch struct {
	informer cache.SharedIndexInformer
	gk       schema.GroupKind
	stop     context.CancelFunc
}

// startWatches starts the typed informers and waits for their first lists.
func (d *Detector) startWatches(ctx context.Context) (*watches, error) {
	w := &watches{d: d, meta: map[schema.GroupVersionResource]*metaWatch{}}
	f := informers.NewSharedInformerFactoryWithOptions(d.opts.Kube, 0, informers.WithTransform(slim))
	w.nodes = f.Core().V1().Nodes().Informer()
	factories := []informers.SharedInformerFactory{f}
	workloads := func(f informers.SharedInformerFactory) map[string]cache.SharedIndexInformer {
		factories = append(factories, f)
		return map[string]cache.SharedIndexInformer{"Job": f.Batch().V1().Jobs().Informer(),
			"Deployment": f.Apps().V1().Deployments().Informer(), "StatefulSet": f.Apps().V1().StatefulSets().Informer()}
	}
	w.workloads = map[string][]cache.SharedIndexInformer{"Pod": {f.Core().V1().Pods().Informer()}}
	if d.opts.Engine == nil {
		for kind, inf := range workloads(informers.NewSharedInformerFactoryWithOptions(d.opts.Kube, 0, informers.WithTransform(slim))) {
			w.workloads[kind] = append(w.workloads[kind], inf)
		}
	} else {
		// The engine's own workloads (both its labels: ours) are never shadows and the
		// metadata watches hold them: the shadow watches leave them out, in two selections
		// (a selector cannot say "not both"): the workloads of no or another inventory, and
		// those that carry the inventory's label without gpuctl's — a team may forge the
		// one, which the engine does not prune (it deletes only what gpuctl labelled). At
		// 10,000 Jobs that was ~14 MiB of the heap and a second decode of every status update
		// (issue #18, bar 6). Their pods carry no inventory label and are still watched.
		id := d.opts.Engine.InventoryID()
		for _, sel := range []string{keys.ApplySetPartOf + "!=" + id, keys.ApplySetPartOf + "=" + id + "," + keys.ManagedBy + "!=" + keys.ManagedByValue} {
			f := informers.NewSharedInformerFactoryWithOptions(d.opts.Kube, 0, informers.WithTransform(slim),
				informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
			for kind, inf := range workloads(f) {
				w.workloads[kind] = append(w.workloads[kind], inf)
			}
		}
	}
	if _, err := w.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.enqueueNode(obj) },
		UpdateFunc: func(old, obj any) {
			if !maps.Equal(labelsOf(old), labelsOf(obj)) {
				w.enqueueNode(obj)
			}
		},
		DeleteFunc: func(obj any) { w.enqueueNode(obj) },
	}); err != nil {
		return nil, err
	}
	for kind, infs := range w.workloads {
		h := func(obj any) { w.enqueueWorkload(kind, obj) }
		for _, inf := range infs {
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: h,
				UpdateFunc: func(_, obj any) { h(obj) }, DeleteFunc: h}); err != nil {
				return nil, err
			}
		}
	}
	for _, fa := range factories {
		fa.Start(ctx.Done())
	}
	for _, fa := range factories {
		for typ, ok := range fa.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return nil, fmt.Errorf("drift: watch %v: the first list did not complete", typ)
			}
		}
	}
	if d.opts.Engine != nil {
		eo := d.opts.Engine.Options()
		fi := informers.NewSharedInformerFactoryWithOptions(d.opts.Kube, 0, informers.WithNamespace(eo.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + eo.InventoryName }))
		w.inventory = fi.Core().V1().ConfigMaps().Informer()
		fi.Start(ctx.Done()) // not waited for: Inventory says false until it has listed
	}
	return w, nil
}

// ensure runs a metadata informer for each resource of the desired state (and stops those of
// resources no longer applied), waiting for the first lists.
func (w *watches) ensure(ctx context.Context, ds *desiredState) error {
	w.mu.Lock()
	if w.partOf != ds.partOf { // another inventory: select again
		for gvr, mw := range w.meta {
			mw.stop()
			delete(w.meta, gvr)
		}
		w.partOf = ds.partOf
	}
	var started []*metaWatch
	for gvr, gk := range ds.gvrs {
		if w.meta[gvr] != nil {
			continue
		}
		mw := w.startMeta(ctx, gvr, gk, ds.partOf)
		w.meta[gvr] = mw
		started = append(started, mw)
	}
	for gvr, mw := range w.meta {
		if _, ok := ds.gvrs[gvr]; !ok {
			mw.stop()
			delete(w.meta, gvr)
		}
	}
	w.mu.Unlock()
	for _, mw := range started {
		wait, cancel := context.WithTimeout(ctx, time.Minute)
		ok := cache.WaitForCacheSync(wait.Done(), mw.informer.HasSynced)
		cancel()
		if !ok {
			return fmt.Errorf("drift: watch %s: the first list did not complete", mw.gk)
		}
	}
	return nil
}

func (w *watches) startMeta(ctx context.Context, gvr schema.GroupVersionResource, gk schema.GroupKind, partOf string) *metaWatch {
	inf := metadatainformer.NewFilteredMetadataInformer(w.d.meta, gvr, metav1.NamespaceAll, 0,
		cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = keys.ApplySetPartOf + "=" + partOf }).Informer()
	_ = inf.SetTransform(slimMetadata)
	key := func(obj any) string {
		m, ok := asMember(obj)
		if !ok {
			return ""
		}
		return "o:" + object.KeyOf(gk, m.Namespace, m.Name)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial { // the first list is evaluated by the full pass after each sync
				w.d.queue.Add(key(obj))
			}
		},
		UpdateFunc: func(old, obj any) {
			if specOrMetaChanged(gk, old, obj) {
				w.d.queue.Add(key(obj))
			}
		},
		DeleteFunc: func(obj any) { w.d.queue.Add(key(obj)) },
	})
	ctx, cancel := context.WithCancel(ctx)
	go inf.Run(ctx.Done())
	return &metaWatch{informer: inf, gk: gk, stop: cancel}
}

// member is what a metadata watch keeps of an object gpuctl applied (slimMetadata): what the
// engine's plan reads of it (reconciler.Member), with the hash of its labels and annotations
// in their place. About 100 bytes, against ~650 for a PartialObjectMetadata that kept the hash
// in an annotations map: ~5 MiB less between syncs at 10,000 members (issue #18, bar 6).
type member struct{ reconciler.Member }

// GetObjectMeta lets the informer's key functions (meta.Accessor) read the member's identity.
func (m *member) GetObjectMeta() metav1.Object {
	om := &metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation}
	if m.Deleting {
		om.DeletionTimestamp = &metav1.Time{}
	}
	return om
}

func (m *member) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (m *member) DeepCopyObject() runtime.Object   { c := *m; return &c }

// asMember returns a metadata watch's member, also from a deletion whose final state is unknown.
func asMember(obj any) (*member, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(*member)
	return m, ok
}

// slimMetadata keeps what the metadata cache needs: identity, generation, deletion, and the
// hash of labels and annotations (managedFields are fetched fresh when a field is attributed).
// An informer may transform an object again (a relist replaces its store with what it holds):
// a member stays as it is.
func slimMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &member{reconciler.Member{Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, MetaHash: object.MetaHash(m.Labels, m.Annotations), Deleting: m.DeletionTimestamp != nil}}, nil
}

// specOrMetaChanged tells an update worth evaluating: a new generation (the spec changed),
// other labels or annotations, or any change of an object that has no generation (or one
// that does not follow its changes: object.GenerationTracksChanges). Status
// updates of Jobs and Deployments are skipped without a request.
func specOrMetaChanged(gk schema.GroupKind, old, obj any) bool {
	a, okA := asMember(old)
	b, okB := asMember(obj)
	if !okA || !okB {
		return true
	}
	if b.Generation == 0 || !object.GenerationTracksChanges(gk) {
		return a.ResourceVersion != b.ResourceVersion
	}
	return a.Generation != b.Generation || a.MetaHash != b.MetaHash || a.Deleting != b.Deleting
}

// memberVersion is the resourceVersion of the metadata watches' object of gk namespace/name,
// and whether they hold one.
func (w *watches) memberVersion(gk schema.GroupKind, namespace, name string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.memberAt(gk, namespace+"/"+name); m != nil {
		return m.ResourceVersion, true
	}
	return "", false
}

// memberAt is the metadata watches' member of gk at store key (namespace/name, or the name of
// a cluster-scoped object), or nil. The caller holds w.mu.
func (w *watches) memberAt(gk schema.GroupKind, key string) *member {
	for _, mw := range w.meta {
		if mw.gk != gk {
			continue
		}
		if obj, found, err := mw.informer.GetIndexer().GetByKey(key); err == nil && found {
			if m, ok := asMember(obj); ok {
				return m
			}
		}
	}
	return nil
}

// undesiredWorkloads are the shadow keys of the Jobs, Deployments and StatefulSets that the
// metadata watches hold (they carry the inventory's label) and ds does not declare: the
// shadow watches leave them out, and a full pass evaluates each (evalShadow). What
// readLabelled remembers of the others is forgotten.
func (w *watches) undesiredWorkloads(ds *desiredState) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	undesired := map[string]bool{}
	for _, mw := range w.meta {
		if _, workload := workloadResources[mw.gk.Kind]; !workload || mw.gk.Kind == "Pod" || mw.gk != workloadGK(mw.gk.Kind) {
			continue
		}
		for _, k := range mw.informer.GetIndexer().ListKeys() {
			ns, name, _ := cache.SplitMetaNamespaceKey(k)
			if ds.objects[object.KeyOf(mw.gk, ns, name)] == nil {
				key := mw.gk.Kind + "/" + ns + "/" + name
				undesired[key] = true
				out = append(out, "s:"+key)
			}
		}
	}
	for key := range w.labelled {
		if !undesired[key] {
			delete(w.labelled, key)
		}
	}
	return out
}

// labelledRead is a workload as readLabelled read it, and the resourceVersion that the
// metadata watches had for it then.
type labelledRead struct {
	version string
	obj     any
}

// readLabelled is getWorkload of a workload that carries gpuctl's labels and that Git does not
// declare, whose object in the metadata watches is at version: read again only when that
// changed. Every full pass evaluates each such workload, and a team may label thousands of its
// own (a GET of each at every pass, else).
func (d *Detector) readLabelled(ctx context.Context, kind, ns, name, version string) (any, error) {
	key := kind + "/" + ns + "/" + name
	d.w.mu.Lock()
	r, ok := d.w.labelled[key]
	d.w.mu.Unlock()
	if ok && r.version == version {
		return r.obj, nil
	}
	obj, err := d.getWorkload(ctx, kind, ns, name)
	d.w.mu.Lock()
	defer d.w.mu.Unlock()
	if err != nil {
		delete(d.w.labelled, key)
		return nil, err
	}
	if d.w.labelled == nil {
		d.w.labelled = map[string]labelledRead{}
	}
	d.w.labelled[key] = labelledRead{version: version, obj: obj}
	return obj, nil
}

// managedOwner reports whether a workload's controller (of namespace ns) is an object gpuctl
// applied: the metadata watch of its kind holds it, with its UID. An owner is looked up in the
// workload's namespace, or cluster-wide; an owner reference that names another object's UID
// names no member.
func (w *watches) managedOwner(ns string, owner *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return false
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: owner.Kind}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, key := range []string{ns + "/" + owner.Name, owner.Name} {
		if m := w.memberAt(gk, key); m != nil && m.UID == owner.UID {
			return true
		}
	}
	return false
}

func (w *watches) enqueueNode(obj any) {
	if m, err := metaOf(obj); err == nil {
		w.d.queue.Add("n:" + m.GetName())
	}
}

// enqueueWorkload queues a workload that requests GPUs, or that was reported before.
func (w *watches) enqueueWorkload(kind string, obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	key := kind + "/" + m.GetNamespace() + "/" + m.GetName()
	if ours(m, w.partOfNow()) {
		return // applied by gpuctl: never a shadow
	}
	if gpusOf(obj) > 0 || w.d.hasShadow(key) {
		w.d.queue.Add("s:" + key)
	}
}

// ours tells a workload that gpuctl applied: it carries the inventory's label and gpuctl's,
// as the engine labels what it applies (and prunes only what carries both).
func ours(m metav1.Object, partOf string) bool {
	l := m.GetLabels()
	return partOf != "" && l[keys.ApplySetPartOf] == partOf && l[keys.ManagedBy] == keys.ManagedByValue
}

// partOfNow is the inventory id of the applied revision.
func (w *watches) partOfNow() string {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	if w.d.desired == nil {
		return ""
	}
	return w.d.desired.partOf
}

// metaOf reads the metadata of an informer's object, or of a tombstone.
func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("drift: unexpected object %T", obj)
	}
	return m, nil
}

func labelsOf(obj any) map[string]string {
	if m, err := metaOf(obj); err == nil {
		return m.GetLabels()
	}
	return nil
}

// Annotations that slim records on the cached workloads (never written to the cluster).
const (
	gpusKey     = "gpuctl.internal/gpus"
	nodeKey     = "gpuctl.internal/node"
	finishedKey = "gpuctl.internal/finished" // how a pod or Job ended: completed, failed
)

// slim reduces the typed informers' workloads to their metadata and the GPUs they request (a
// cluster's pods and jobs would otherwise be held whole: a Job's typed struct alone is a few
// kilobytes); Nodes lose their status.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		o.Status = corev1.NodeStatus{}
		o.Spec = corev1.NodeSpec{}
		return o, nil
	case *corev1.Pod, *batchv1.Job, *appsv1.Deployment, *appsv1.StatefulSet:
		m, _ := metaOf(o)
		om := slimMeta(m)
		if f := workloadFinished(o); f != "" {
			if om.Annotations == nil {
				om.Annotations = map[string]string{}
			}
			om.Annotations[finishedKey] = f
		}
		if n := workloadGPUs(o); n > 0 {
			if om.Annotations == nil {
				om.Annotations = map[string]string{}
			}
			om.Annotations[gpusKey] = strconv.FormatInt(n, 10)
			if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
				om.Annotations[nodeKey] = p.Spec.NodeName
			}
		}
		return &metav1.PartialObjectMetadata{ObjectMeta: om}, nil
	}
	return obj, nil
}

// slimMeta keeps identity, the inventory label, MultiKueue's labels, owners, the drift annotation, and the manager that created
// the object (its first managedFields entry outside status), without its field set.
func slimMeta(m metav1.Object) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
		Generation: m.GetGeneration(), CreationTimestamp: m.GetCreationTimestamp(), OwnerReferences: m.GetOwnerReferences()}
	// The only labels read: gpuctl applied it (ours), Kueue's MultiKueue copied it (keys.MultiKueueCopy, in a worker).
	for _, k := range []string{keys.ApplySetPartOf, keys.ManagedBy, keys.MultiKueueOrigin, keys.KueuePrebuiltWorkload} {
		if v, ok := m.GetLabels()[k]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	if v, ok := m.GetAnnotations()[keys.Drift]; ok {
		out.Annotations = map[string]string{keys.Drift: v}
	}
	var first *metav1.ManagedFieldsEntry
	mf := m.GetManagedFields()
	for i := range mf {
		e := &mf[i]
		if e.Subresource != "" || e.Time == nil {
			continue
		}
		if first == nil || e.Time.Before(first.Time) {
			first = e
		}
	}
	if first != nil {
		out.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: first.Manager, Operation: first.Operation, Time: first.Time}}
	}
	return out
}

// Members gives the engine the members of inventory id of group-kind gk that the metadata
// watches hold (reconciler.Watched), and false when no synced watch of that inventory holds
// gk: the engine then lists them.
func (d *Detector) Members(id string, gk schema.GroupKind) ([]reconciler.Member, bool) {
	d.mu.Lock()
	w := d.w
	d.mu.Unlock()
	if w == nil {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.partOf != id {
		return nil, false
	}
	for _, mw := range w.meta {
		if mw.gk != gk || !mw.informer.HasSynced() {
			continue
		}
		objs := mw.informer.GetStore().List()
		out := make([]reconciler.Member, 0, len(objs))
		for _, obj := range objs {
			m, ok := obj.(*member)
			if !ok {
				return nil, false
			}
			out = append(out, m.Member)
		}
		return out, true
	}
	return nil, false
}

// Inventory gives the engine its inventory's parent from the watch (reconciler.Watched).
func (d *Detector) Inventory(namespace, name string) (*unstructured.Unstructured, bool) {
	d.mu.Lock()
	w := d.w
	d.mu.Unlock()
	if w == nil || w.inventory == nil || !w.inventory.HasSynced() {
		return nil, false
	}
	obj, found, err := w.inventory.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, false
	}
	if !found {
		return nil, true
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, false
	}
	u, err := toUnstructured(cm, "ConfigMap")
	return u, err == nil
}

// Nodes gives the engine the nodes from the watch, with their metadata (reconciler.Watched).
func (d *Detector) Nodes() ([]*unstructured.Unstructured, bool) {
	d.mu.Lock()
	w := d.w
	d.mu.Unlock()
	if w == nil || !w.nodes.HasSynced() {
		return nil, false
	}
	objs := w.nodes.GetStore().List()
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return nil, false
		}
		u, err := toUnstructured(n, "Node")
		if err != nil {
			return nil, false
		}
		out = append(out, u)
	}
	return out, true
}

// toUnstructured converts a typed core/v1 object of the informers' cache (never changed: it
// is shared) to an unstructured one of kind.
func toUnstructured(obj runtime.Object, kind string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	return u, nil
}
