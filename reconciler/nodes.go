package reconciler

import (
	"context"
	"fmt"
	"sort"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/managedfields"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var nodeGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// labelsOwnedBy returns the labels of an object that a field manager owns (through apply
// only, with applyOnly).
func labelsOwnedBy(u *unstructured.Unstructured, manager string, applyOnly bool) map[string]bool {
	return managedfields.Labels(u.GetManagedFields(), manager, applyOnly)
}

// nodeApply is the apply configuration of gpuctl's labels on a node.
func nodeApply(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node"}}
	u.SetName(name)
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	return u
}

// planNodes turns pool label intents into per-node label changes: labels to set, and labels
// gpuctl set before that no pool asks for any more. Labels that the node labeler publishes
// (gpu-type) are left to it. pools scopes the removals (see scopedPools): a node that no
// intent names loses gpuctl's labels only when its pool label is in pools (nil: every node);
// with no intents and an empty pools, the nodes are not even listed.
func (m *Manager) planNodes(ctx context.Context, intents []*unstructured.Unstructured, pools map[string]bool, warnings *[]string) ([]*Change, error) {
	if len(intents) == 0 && pools != nil && len(pools) == 0 {
		return nil, nil
	}
	live := map[string]*unstructured.Unstructured{}
	if nodes, ok := m.watchedNodes(); ok {
		for _, n := range nodes {
			live[n.GetName()] = n
		}
	} else {
		list, err := m.dyn.Resource(nodeGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			live[list.Items[i].GetName()] = &list.Items[i]
		}
	}
	var out []*Change
	wanted := map[string]bool{}
	for _, in := range intents {
		name := in.GetName()
		wanted[name] = true
		c := &Change{Object: object.RefOf(in), resource: nodeGVR, stage: render.KindOrder("Node")}
		n := live[name]
		if n == nil {
			c.Action, c.Reason = ActionSkipped, "node not found; its pool labels are not applied"
			out = append(out, c)
			continue
		}
		labels := in.GetLabels()
		if labelsOwnedBy(n, keys.NodeLabelerFieldManager, false)[keys.GPUType] {
			if declared, found := labels[keys.GPUType], n.GetLabels()[keys.GPUType]; declared != "" && declared != found {
				*warnings = append(*warnings, fmt.Sprintf("pool %s declares gpu-type %s on node %s, but the node labeler found %s; the node keeps %s",
					labels[keys.Pool], declared, name, found, found))
			}
			delete(labels, keys.GPUType)
			c.Reason = keys.GPUType + " is published by the node labeler"
		}
		m.nodeChange(c, n, labels)
		out = append(out, c)
	}
	for name, n := range live {
		if !wanted[name] && len(labelsOwnedBy(n, m.opts.FieldManager, true)) > 0 && (pools == nil || pools[n.GetLabels()[keys.Pool]]) {
			c := &Change{Object: object.RefOf(nodeApply(name, nil)), resource: nodeGVR, stage: render.KindOrder("Node")}
			m.nodeChange(c, n, nil)
			c.Reason = "in no pool any more: removes the labels gpuctl gave it"
			out = append(out, c)
		}
	}
	return out, nil
}

// nodeChange decides the labels to set on one node, and those gpuctl owns that go away.
func (m *Manager) nodeChange(c *Change, n *unstructured.Unstructured, labels map[string]string) {
	c.Live, c.Desired = n, nodeApply(n.GetName(), labels)
	owned := labelsOwnedBy(n, m.opts.FieldManager, true)
	have := n.GetLabels()
	var keysSorted []string
	for k := range labels {
		keysSorted = append(keysSorted, k)
	}
	sort.Strings(keysSorted)
	takeOwnership := false
	for _, k := range keysSorted {
		old, ok := have[k]
		if !ok || old != labels[k] {
			c.Diff = append(c.Diff, object.FieldDiff{Path: "metadata.labels." + k, Old: orNil(old, ok), New: labels[k]})
		}
		takeOwnership = takeOwnership || !owned[k]
	}
	for k := range owned {
		if _, keep := labels[k]; !keep {
			c.Diff = append(c.Diff, object.FieldDiff{Path: "metadata.labels." + k, Old: have[k]})
		}
	}
	sort.Slice(c.Diff, func(i, j int) bool { return c.Diff[i].Path < c.Diff[j].Path })
	switch {
	case len(c.Diff) > 0:
		c.Action = ActionUpdate
	case takeOwnership:
		c.Action = ActionUpdate
		if c.Reason == "" {
			c.Reason = "labels already set by hand; gpuctl takes them over so that it can remove them later"
		}
	default:
		c.Action = ActionUnchanged
	}
}

func orNil(s string, ok bool) any {
	if !ok {
		return nil
	}
	return s
}
