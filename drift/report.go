package drift

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/object"
)

// Category is what kind of difference an item is.
type Category string

// The categories of drift.
const (
	// Modified: a field that gpuctl applies has another value in the cluster (or is gone).
	Modified Category = "modified"
	// Deleted: an object that Git declares was deleted from the cluster by hand.
	Deleted Category = "deleted"
	// NodeLabel: a pool label that gpuctl sets on a node was changed or removed by hand, or
	// set by hand on a node that no pool names.
	NodeLabel Category = "node-label"
	// NodeMissing: a pool names a node that does not exist.
	NodeMissing Category = "node-missing"
	// GPUType: a pool declares a gpu-type that differs from the one the node labeler found.
	GPUType Category = "gpu-type"
	// Shadow: a workload requesting GPUs in a managed namespace (or on a pool node) that is
	// not in Git: GPUs spent without review.
	Shadow Category = "shadow"
)

// Categories lists every category, in report order.
var Categories = []Category{Modified, Deleted, NodeLabel, NodeMissing, GPUType, Shadow}

// Correctable reports whether --drift=correct repairs items of the category (shadow
// workloads only with --drift-delete-shadow; node-missing and gpu-type never: Git or the
// hardware must change).
func (c Category) Correctable() bool {
	switch c {
	case Modified, Deleted, NodeLabel:
		return true
	}
	return false
}

// Field is one field that differs.
type Field struct {
	// Path is the field in kubectl's dotted form, e.g. spec.template.spec.containers[0].image.
	Path string `json:"path"`
	// Desired is the value in Git (nil: Git does not set it); Live the value in the cluster
	// (nil: the field is gone).
	Desired any `json:"desired,omitempty"`
	Live    any `json:"live,omitempty"`
	// Manager, Operation and Time come from the object's managedFields: the field manager
	// that owns the live value (kubectl-edit, kubectl-client-side-apply, ...), whether it
	// applied or updated, and when. For a removed field no manager owns it any more: the
	// latest other writer is named and Inferred is set.
	Manager   string     `json:"manager,omitempty"`
	Operation string     `json:"operation,omitempty"`
	Time      *time.Time `json:"time,omitempty"`
	Inferred  bool       `json:"inferred,omitempty"`
}

// Item is one object that differs from Git.
type Item struct {
	Object   object.Ref `json:"object"`
	Category Category   `json:"category"`
	// Source is the file in Git the object comes from (empty for shadow workloads).
	Source string `json:"source,omitempty"`
	// Message says in one line what differs.
	Message string `json:"message"`
	// Fields are the differing fields (modified, node-label, gpu-type).
	Fields []Field `json:"fields,omitempty"`
	// Manager is who made the difference, when known (the first field's manager, or the
	// manager that created a shadow workload); Changed is when, from managedFields.
	Manager string     `json:"manager,omitempty"`
	Changed *time.Time `json:"changed,omitempty"`
	// GPUs is the number of GPUs a shadow workload requests (per replica × replicas).
	GPUs int64 `json:"gpus,omitempty"`
	// Detected is when gpuctl first saw this difference.
	Detected time.Time `json:"detected"`
	// Correction is what --drift=correct did or will do ("" in report mode), and Error the
	// last failed attempt.
	Correction string `json:"correction,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Key identifies an item across reports: one item per object and category.
func (it Item) Key() string {
	return string(it.Category) + "|" + it.Object.Kind + "|" + it.Object.Namespace + "|" + it.Object.Name
}

// Report is the drift of the cluster against the last applied revision.
type Report struct {
	// Generated is when the report was last brought up to date.
	Generated time.Time `json:"generated"`
	// Mode is the daemon's drift mode.
	Mode Mode `json:"mode"`
	// Revision is the applied revision the cluster is compared with.
	Revision string `json:"revision,omitempty"`
	// Items are the differences, in Sort order.
	Items []Item `json:"items"`
	// Truncated counts the items left out to keep the report within MaxItems.
	Truncated int `json:"truncated,omitempty"`
	// History is the bounded list of changes to the report, newest last (set by
	// Since and by the API; the store keeps it apart).
	History []Entry `json:"history,omitempty"`
}

// MaxItems bounds the items a stored report keeps (a ConfigMap holds at most 1 MiB).
const MaxItems = 500

// Counts returns the number of items per category.
func (r *Report) Counts() map[Category]int {
	out := map[Category]int{}
	for _, it := range r.Items {
		out[it.Category]++
	}
	return out
}

// ShadowGPUs is the sum of the GPUs that shadow workloads request.
func (r *Report) ShadowGPUs() int64 {
	var n int64
	for _, it := range r.Items {
		if it.Category == Shadow {
			n += it.GPUs
		}
	}
	return n
}

// Summary is the one-line account of a report, e.g.
// "3 drifted: 1 modified, 1 deleted, 1 shadow (8 GPUs)" or "no drift".
func (r *Report) Summary() string {
	if len(r.Items) == 0 && r.Truncated == 0 {
		return "no drift"
	}
	c := r.Counts()
	s := fmt.Sprintf("%d drifted:", len(r.Items)+r.Truncated)
	sep := " "
	for _, cat := range Categories {
		if c[cat] == 0 {
			continue
		}
		s += fmt.Sprintf("%s%d %s", sep, c[cat], cat)
		if cat == Shadow {
			s += " (" + humanize.Plural(r.ShadowGPUs(), "GPU") + ")"
		}
		sep = ", "
	}
	if r.Truncated > 0 {
		s += fmt.Sprintf("%s%d more not listed", sep, r.Truncated)
	}
	return s
}

// Sort orders items by category, then as object.Compare orders their objects (namespace,
// kind, name).
func Sort(items []Item) {
	rank := map[Category]int{}
	for i, c := range Categories {
		rank[c] = i
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.Category != b.Category {
			return rank[a.Category] < rank[b.Category]
		}
		return object.Compare(a.Object, b.Object) < 0
	})
}
