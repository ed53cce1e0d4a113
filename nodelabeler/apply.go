package nodelabeler

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/managedfields"
)

// NodeClient is the part of the Node API that the labeler uses (get and patch, which is all
// its RBAC allows). client-go's CoreV1().Nodes() satisfies it.
type NodeClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
	Apply(ctx context.Context, node *corev1ac.NodeApplyConfiguration, opts metav1.ApplyOptions) (*corev1.Node, error)
}

// Outcome says what [Apply] did to a node's labels.
type Outcome string

// Outcomes of a [Result].
const (
	// OutcomeConfigured: the labels were applied because something differed.
	OutcomeConfigured Outcome = "configured"
	// OutcomeUnchanged: the node already carried exactly these labels, owned by the labeler.
	OutcomeUnchanged Outcome = "unchanged"
)

// Result is what one [Apply] did.
type Result struct {
	Node    string
	Outcome Outcome
	// Labels are the labels published.
	Labels map[string]string
	// Set are the keys that were added or changed, sorted.
	Set []string
	// Removed are the keys the labeler published before and no longer does, sorted.
	Removed []string
}

// Apply publishes labels on the named node with server-side apply under the field manager
// gpuctl-node-labeler, forcing ownership (the labeler tells the truth about its node). The
// apply configuration holds only metadata.labels, so labels published before and missing
// now are removed, and labels of other managers are untouched. A node that does not exist is
// an error: Apply never creates one. When the node already carries exactly these labels
// under the labeler's ownership, nothing is written.
func Apply(ctx context.Context, nodes NodeClient, name string, labels map[string]string) (Result, error) {
	res := Result{Node: name, Labels: maps.Clone(labels)}
	live, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return res, fmt.Errorf("node %s: get: %w", name, err)
	}
	owned := managedfields.Labels(live.ManagedFields, keys.NodeLabelerFieldManager, true)
	for k, v := range labels {
		if old, ok := live.Labels[k]; !ok || old != v {
			res.Set = append(res.Set, k)
		}
	}
	for k := range owned {
		if _, keep := labels[k]; !keep {
			res.Removed = append(res.Removed, k)
		}
	}
	slices.Sort(res.Set)
	slices.Sort(res.Removed)
	takeOver := slices.ContainsFunc(slices.Collect(maps.Keys(labels)), func(k string) bool { return !owned[k] })
	if len(res.Set) == 0 && len(res.Removed) == 0 && !takeOver {
		res.Outcome = OutcomeUnchanged
		return res, nil
	}
	ac := corev1ac.Node(name).WithLabels(labels)
	if _, err := nodes.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: keys.NodeLabelerFieldManager, Force: true}); err != nil {
		return res, fmt.Errorf("node %s: apply labels: %w", name, err)
	}
	res.Outcome = OutcomeConfigured
	return res, nil
}
