package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Tooling is the applyset.kubernetes.io/tooling value of gpuctl's inventory.
const Tooling = toolingName + "/v0.1"

// toolingName is the name part of Tooling: a parent whose tooling is gpuctl/<any version> is
// gpuctl's.
const toolingName = "gpuctl"

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// inventory is gpuctl's kubectl ApplySet: the parent ConfigMap's id, and the group-kinds and
// namespaces that its members may be found in.
type inventory struct {
	name, namespace string
	id              string
	groupKinds      map[schema.GroupKind]bool
	namespaces      map[string]bool
	exists          bool
}

// applySetID computes the ApplySet id of a parent, as kubectl does:
// applyset-<base64url(sha256(<name>.<namespace>.<kind>.<group>))>-v1.
func applySetID(name, namespace, kind, group string) string {
	sum := sha256.Sum256([]byte(name + "." + namespace + "." + kind + "." + group))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

func newInventory(name, namespace string) *inventory {
	return &inventory{name: name, namespace: namespace, id: applySetID(name, namespace, "ConfigMap", ""),
		groupKinds: map[schema.GroupKind]bool{}, namespaces: map[string]bool{}}
}

// formatGroupKinds writes group-kinds as kubectl does: Kind.group, or Kind for the core group.
func formatGroupKinds(gks map[schema.GroupKind]bool) string {
	var out []string
	for gk := range gks {
		s := gk.Kind
		if gk.Group != "" {
			s += "." + gk.Group
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func parseGroupKinds(s string) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		kind, group, _ := strings.Cut(part, ".")
		out[schema.GroupKind{Group: group, Kind: kind}] = true
	}
	return out
}

func formatSet(set map[string]bool) string {
	out := make([]string, 0, len(set))
	for s := range set {
		if s != "" {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// readInventory reads the parent ConfigMap; a missing one is an empty inventory.
func (m *Manager) readInventory(ctx context.Context) (*inventory, error) {
	inv := newInventory(m.opts.InventoryName, m.opts.Namespace)
	u, err := m.watchedInventory(inv)
	if u == nil {
		u, err = m.dyn.Resource(configMapGVR).Namespace(inv.namespace).Get(ctx, inv.name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return inv, nil
	}
	if err != nil {
		return nil, err
	}
	m.inventoryRV.Store(u.GetResourceVersion())
	if err := inv.checkParent(u); err != nil {
		return nil, err
	}
	inv.exists = true
	ann := u.GetAnnotations()
	inv.groupKinds = parseGroupKinds(ann[keys.ApplySetGroupKinds])
	for _, ns := range strings.Split(ann[keys.ApplySetNamespaces], ",") {
		if ns != "" {
			inv.namespaces[ns] = true
		}
	}
	return inv, nil
}

// ErrForeignInventory is matched by errors.Is when the inventory's parent exists but is not
// gpuctl's ApplySet: another tool's (kubectl's ApplySet), one with another id, or a plain
// ConfigMap. gpuctl refuses to sync rather than take it over (KEP-3659).
var ErrForeignInventory = errors.New("is not gpuctl's inventory")

// checkParent verifies a live parent as KEP-3659 asks of a tool: its id label is the id
// computed from its name and namespace, and its tooling is gpuctl's (any version).
func (inv *inventory) checkParent(u *unstructured.Unstructured) error {
	tooling := u.GetAnnotations()[keys.ApplySetTooling]
	id, hasID := u.GetLabels()[keys.ApplySetID]
	what := fmt.Sprintf("ConfigMap %s/%s", inv.namespace, inv.name)
	switch {
	case !hasID:
		return fmt.Errorf("%s %w: it has no %s label (not an ApplySet parent); gpuctl does not take it over, and wrote nothing",
			what, ErrForeignInventory, keys.ApplySetID)
	case id != inv.id:
		return fmt.Errorf("%s %w: its %s label is %q, not %q as computed from its name and namespace; gpuctl does not take it over, and wrote nothing",
			what, ErrForeignInventory, keys.ApplySetID, id, inv.id)
	case !strings.HasPrefix(tooling, toolingName+"/"):
		if tooling == "" {
			tooling = "none"
		}
		return fmt.Errorf("%s %w: it is the ApplySet parent of another tool (%s: %s); gpuctl does not take it over, and wrote nothing",
			what, ErrForeignInventory, keys.ApplySetTooling, tooling)
	}
	return nil
}

// parent is the ConfigMap that records the inventory.
func (inv *inventory) parent(gks map[schema.GroupKind]bool, namespaces map[string]bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetName(inv.name)
	u.SetNamespace(inv.namespace)
	u.SetLabels(map[string]string{keys.ApplySetID: inv.id, keys.ManagedBy: keys.ManagedByValue})
	u.SetAnnotations(map[string]string{
		keys.ApplySetTooling:    Tooling,
		keys.ApplySetGroupKinds: formatGroupKinds(gks),
		keys.ApplySetNamespaces: formatSet(namespaces),
	})
	return u
}

// writeInventory records group-kinds and namespaces on the parent, creating the namespace on
// first use; it writes nothing when the parent already says so.
func (m *Manager) writeInventory(ctx context.Context, inv *inventory, gks map[schema.GroupKind]bool, namespaces map[string]bool) error {
	if inv.exists && formatGroupKinds(gks) == formatGroupKinds(inv.groupKinds) && formatSet(namespaces) == formatSet(inv.namespaces) {
		return nil
	}
	if !inv.exists {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": inv.namespace}}}
		if _, err := m.dyn.Resource(namespaceGVR).Create(ctx, ns, metav1.CreateOptions{FieldManager: m.opts.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	u, err := m.dyn.Resource(configMapGVR).Namespace(inv.namespace).Apply(ctx, inv.name, inv.parent(gks, namespaces),
		metav1.ApplyOptions{FieldManager: m.opts.FieldManager}) // no force: a conflict is an error, not a takeover
	if err != nil {
		return err
	}
	m.inventoryRV.Store(u.GetResourceVersion())
	inv.exists, inv.groupKinds, inv.namespaces = true, gks, namespaces
	return nil
}
