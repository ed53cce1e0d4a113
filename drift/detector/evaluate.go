package detector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/managedfields"
	"github.com/gpuctl/gpuctl/internal/object"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// evaluateAll compares everything once: the applied objects, the pool nodes and the
// workloads that request GPUs. With full (every Resync) the applied objects are listed, one
// paged LIST per resource compared locally, and only those that differ are evaluated one by
// one; after a sync (full false) only the objects it left pending are, since it applied the
// others.
func (d *Detector) evaluateAll(ctx context.Context, ds *desiredState, full bool) error {
	if full {
		if err := d.listObjects(ctx, ds); err != nil {
			return err
		}
	} else {
		d.mu.Lock()
		pending := d.pending
		d.pending = nil
		d.mu.Unlock()
		for _, key := range pending {
			d.queue.Add(key)
		}
	}
	for _, key := range d.staleKeys(ds) {
		d.resolve(key, "", whyNotInGit)
	}
	for name := range ds.nodes {
		d.queue.Add("n:" + name)
	}
	for _, obj := range d.w.nodes.GetStore().List() {
		if m, err := metaOf(obj); err == nil {
			if _, ok := m.GetLabels()[keys.Pool]; ok {
				d.queue.Add("n:" + m.GetName())
			}
		}
	}
	for _, key := range append(d.shadowKeys(), d.w.undesiredWorkloads(ds)...) {
		d.queue.Add(key)
	}
	d.reportedKeys(func(it drift.Item) { // re-check what is reported: it may be gone
		if it.Category == drift.Modified || it.Category == drift.Deleted {
			d.queue.Add("o:" + it.Object.Key())
			return
		}
		switch it.Category {
		case drift.NodeLabel, drift.NodeMissing, drift.GPUType:
			d.queue.Add("n:" + it.Object.Name)
		case drift.Shadow:
			d.queue.Add("s:" + it.Object.Kind + "/" + it.Object.Namespace + "/" + it.Object.Name)
		}
	})
	d.mu.Lock()
	d.evalAt = time.Now().UTC()
	d.dirty = true
	d.mu.Unlock()
	return nil
}

// listObjects lists the applied objects and queues those that differ from Git, are missing,
// or lost their inventory label.
func (d *Detector) listObjects(ctx context.Context, ds *desiredState) error {
	seen := make(map[string]bool, len(ds.objects))
	for gvr, gk := range ds.gvrs {
		opts := metav1.ListOptions{LabelSelector: keys.ApplySetPartOf + "=" + ds.partOf, Limit: 500}
		for {
			l, err := d.dyn.Resource(gvr).List(ctx, opts)
			if err != nil {
				return fmt.Errorf("list %s: %w", gk, err)
			}
			for i := range l.Items {
				live := &l.Items[i]
				key := object.KeyOf(gk, live.GetNamespace(), live.GetName())
				o := ds.objects[key]
				if o == nil {
					continue
				}
				seen[key] = true
				desired, err := o.decode()
				if err != nil {
					return err
				}
				if live.GetDeletionTimestamp() == nil && ignored(live.GetAnnotations()) {
					d.resolveObject(o.ref, "", whyIgnored)
					continue
				}
				if live.GetDeletionTimestamp() == nil && d.opts.Engine.InSync(desired, live) {
					d.resolveObject(o.ref, "", whyMatches)
					continue
				}
				d.queue.Add("o:" + key)
			}
			if opts.Continue = l.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	for key := range ds.objects {
		if !seen[key] {
			d.queue.Add("o:" + key) // deleted, or no longer labelled as a member
		}
	}
	return nil
}

// staleKeys are the reported object items whose objects are no longer applied.
func (d *Detector) staleKeys(ds *desiredState) []string {
	var out []string
	d.reportedKeys(func(it drift.Item) {
		if it.Category != drift.Modified && it.Category != drift.Deleted {
			return
		}
		if ds.objects[it.Object.Key()] == nil {
			out = append(out, it.Key())
		}
	})
	return out
}

// evalObject compares one applied object with the cluster.
func (d *Detector) evalObject(ctx context.Context, ds *desiredState, key string) error {
	o := ds.objects[key]
	if o == nil {
		return nil // no longer applied: staleKeys resolves its items
	}
	desired, err := o.decode()
	if err != nil {
		return err
	}
	live, err := d.opts.Engine.Get(ctx, desired)
	if err != nil {
		return err
	}
	if live != nil && ignored(live.GetAnnotations()) {
		d.resolveObject(o.ref, "", whyIgnored)
		return nil
	}
	if live == nil || live.GetDeletionTimestamp() != nil {
		it := drift.Item{Object: o.ref, Category: drift.Deleted, Source: o.source,
			Message: "deleted from the cluster; Git declares it in " + orUnknown(o.source)}
		if live != nil {
			it.Message = "being deleted (since " + live.GetDeletionTimestamp().UTC().Format(time.RFC3339) + "); Git declares it in " + orUnknown(o.source)
			it.Changed = timePtr(live.GetDeletionTimestamp().Time)
		}
		d.resolve(itemKey(drift.Modified, o.ref), "", "object deleted")
		return d.found(ctx, "o:"+key, it, func(ctx context.Context) error {
			if live != nil {
				return errRetry // recreate once it is gone
			}
			return d.opts.Engine.ApplyOne(ctx, desired, true)
		})
	}
	diffs, err := d.opts.Engine.Drift(ctx, desired, live)
	if err != nil {
		return err
	}
	fields := d.attribute(diffs, managedfields.Owners(live.GetManagedFields(), live.Object))
	d.resolve(itemKey(drift.Deleted, o.ref), "", "recreated")
	if len(fields) == 0 {
		d.resolveObject(o.ref, "", whyMatches)
		return nil
	}
	it := drift.Item{Object: o.ref, Category: drift.Modified, Source: o.source, Fields: fields,
		Manager: fields[0].Manager, Changed: latestTime(fields), Message: modifiedMessage(fields)}
	return d.found(ctx, "o:"+key, it, func(ctx context.Context) error { return d.opts.Engine.ApplyOne(ctx, desired, true) })
}

// attribute turns the fields an apply would change into drift fields, naming who owns each
// live value. Fields that gpuctl's own manager holds (a revision being applied) and fields of
// the ignored controllers are not drift.
func (d *Detector) attribute(diffs []object.FieldDiff, owners []managedfields.Owner) []drift.Field {
	self := d.opts.Engine.Options().FieldManager
	none := func(managedfields.Owner) bool { return false }
	others := func(o managedfields.Owner) bool { return o.Manager == self }
	var out []drift.Field
	for _, df := range diffs {
		f := drift.Field{Path: df.Path, Desired: df.New, Live: df.Old}
		o, ok := managedfields.OwnerOf(owners, df.Path, none)
		switch {
		case ok && o.Manager == self:
			continue
		case ok && slices.Contains(d.opts.IgnoreManagers, o.Manager):
			continue
		case !ok:
			if o, ok = managedfields.Latest(owners, others); ok {
				f.Inferred = true
			}
		}
		if ok {
			f.Manager, f.Operation, f.Time = o.Manager, o.Operation, o.Time
		}
		out = append(out, f)
	}
	return out
}

// evalNode checks one node against the pools: labels, existence, gpu-type.
func (d *Detector) evalNode(ctx context.Context, ds *desiredState, name string) error {
	ref := object.Ref{APIVersion: "v1", Kind: "Node", Name: name}
	intent, inPool := ds.nodes[name]
	obj, found, err := d.w.nodes.GetIndexer().GetByKey(name)
	if err != nil {
		return err
	}
	if !found {
		d.resolve(itemKey(drift.NodeLabel, ref), "", "node deleted")
		d.resolve(itemKey(drift.GPUType, ref), "", "node deleted")
		if !inPool {
			d.resolve(itemKey(drift.NodeMissing, ref), "", "no longer in a pool")
			return nil
		}
		d.set(drift.Item{Object: ref, Category: drift.NodeMissing, Source: intent.source,
			Message: fmt.Sprintf("pool %s names node %s, which does not exist", intent.pool, name)})
		return nil
	}
	d.resolve(itemKey(drift.NodeMissing, ref), "", "node exists")
	node := obj.(*corev1.Node)
	self := d.opts.Engine.Options().FieldManager
	labelerType := managedfields.Labels(node.ManagedFields, keys.NodeLabelerFieldManager, false)[keys.GPUType]
	owners := managedfields.Owners(node.ManagedFields, map[string]any{"metadata": map[string]any{"labels": anyMap(node.Labels)}})
	want := map[string]string{}
	var fields []drift.Field
	if inPool {
		for k, v := range intent.labels {
			if k == keys.GPUType && labelerType {
				continue
			}
			want[k] = v
			if live, ok := node.Labels[k]; !ok || live != v {
				fields = append(fields, d.labelField(owners, k, v, live, ok))
			}
		}
	} else if v, ok := node.Labels[keys.Pool]; ok && !managedfields.Labels(node.ManagedFields, self, false)[keys.Pool] {
		fields = append(fields, d.labelField(owners, keys.Pool, "", v, true))
	}
	if declared := intent.labels[keys.GPUType]; inPool && labelerType && declared != "" && node.Labels[keys.GPUType] != declared {
		it := drift.Item{Object: ref, Category: drift.GPUType, Source: intent.source, Manager: keys.NodeLabelerFieldManager,
			Message: fmt.Sprintf("pool %s declares gpu-type %s, but %s found %s on the node", intent.pool, declared,
				keys.NodeLabelerFieldManager, node.Labels[keys.GPUType]),
			Fields: []drift.Field{d.labelField(owners, keys.GPUType, declared, node.Labels[keys.GPUType], true)}}
		d.set(it)
	} else {
		d.resolve(itemKey(drift.GPUType, ref), "", whyMatches)
	}
	if len(fields) == 0 {
		d.resolve(itemKey(drift.NodeLabel, ref), "", whyMatches)
		return nil
	}
	slices.SortFunc(fields, func(a, b drift.Field) int { return strings.Compare(a.Path, b.Path) })
	it := drift.Item{Object: ref, Category: drift.NodeLabel, Source: intent.source, Fields: fields,
		Manager: fields[0].Manager, Changed: latestTime(fields)}
	if inPool {
		it.Message = "pool " + intent.pool + " labels changed by hand"
	} else {
		it.Message = fmt.Sprintf("labelled for pool %s by hand; no pool file names this node", node.Labels[keys.Pool])
	}
	return d.found(ctx, "n:"+name, it, func(ctx context.Context) error {
		if inPool {
			return d.opts.Engine.ApplyNodeLabels(ctx, name, want, true)
		}
		return d.removePoolLabel(ctx, name)
	})
}

// labelField is one node label that differs; has tells whether the node has the label.
func (d *Detector) labelField(owners []managedfields.Owner, key, desired, live string, has bool) drift.Field {
	f := drift.Field{Path: "metadata.labels." + key}
	if desired != "" {
		f.Desired = desired
	}
	if has {
		f.Live = live
	}
	self := d.opts.Engine.Options().FieldManager
	others := func(o managedfields.Owner) bool { return o.Manager == self }
	o, ok := managedfields.OwnerOf(owners, f.Path, others)
	if !ok {
		o, ok = managedfields.Latest(owners, others)
		f.Inferred = ok
	}
	if ok {
		f.Manager, f.Operation, f.Time = o.Manager, o.Operation, o.Time
	}
	return f
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func itemKey(c drift.Category, ref object.Ref) string {
	return drift.Item{Category: c, Object: ref}.Key()
}

// resolveObject resolves the modified and deleted items of an object.
func (d *Detector) resolveObject(ref object.Ref, how drift.Transition, why string) {
	d.resolve(itemKey(drift.Modified, ref), how, why)
	d.resolve(itemKey(drift.Deleted, ref), how, why)
}

// Reasons a resolved history entry gives that several places share.
const (
	whyMatches  = "matches Git again"
	whyNotInGit = "no longer in Git"
	whyIgnored  = "marked " + keys.Drift + ": " + keys.DriftIgnore
)

func modifiedMessage(fields []drift.Field) string {
	paths := make([]string, 0, len(fields))
	for _, f := range fields {
		paths = append(paths, f.Path)
	}
	s := "changed in the cluster: " + strings.Join(paths, ", ")
	if m := fields[0].Manager; m != "" {
		s += " (by " + m + ")"
	}
	return s
}

func latestTime(fields []drift.Field) *time.Time {
	var t *time.Time
	for _, f := range fields {
		if f.Time != nil && (t == nil || f.Time.After(*t)) {
			t = f.Time
		}
	}
	return t
}

func timePtr(t time.Time) *time.Time {
	u := t.UTC()
	return &u
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown file)"
	}
	return s
}
