package object

import (
	"cmp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Ref identifies a Kubernetes object: its apiVersion, kind, namespace (empty for a
// cluster-scoped object) and name. It is comparable, so it can key a map.
//
// Its JSON form is that of the drift report and the review (apiVersion, kind, namespace,
// name); the engine's plan writes group and version apart (see reconciler.Change).
type Ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// RefOf returns the reference of an object: what GetAPIVersion, GetKind, GetNamespace and
// GetName return, read from the maps at once (a plan and a render take the reference of
// every object, several times).
func RefOf(u *unstructured.Unstructured) Ref {
	md, _ := u.Object["metadata"].(map[string]any)
	return Ref{APIVersion: stringAt(u.Object, "apiVersion"), Kind: KindOf(u), Namespace: stringAt(md, "namespace"), Name: stringAt(md, "name")}
}

// KindOf is u.GetKind(), read at once.
func KindOf(u *unstructured.Unstructured) string { return stringAt(u.Object, "kind") }

// stringAt is m's string value at key, or "" (absent, or not a string), as the
// unstructured getters read it.
func stringAt(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// String formats the reference the way kubectl names objects: "Kind namespace/name", or
// "Kind name" for a cluster-scoped object.
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Group is the API group of the object: "apps" for apps/v1, "" for the core group (v1).
func (r Ref) Group() string {
	group, _, found := strings.Cut(r.APIVersion, "/")
	if !found {
		return ""
	}
	return group
}

// Version is the API version without the group: "v1" for apps/v1 and for v1.
func (r Ref) Version() string {
	_, version, found := strings.Cut(r.APIVersion, "/")
	if !found {
		return r.APIVersion
	}
	return version
}

// GroupKind returns the object's group and kind.
func (r Ref) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group(), Kind: r.Kind}
}

// GroupVersionKind returns the object's group, version and kind.
func (r Ref) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group(), Version: r.Version(), Kind: r.Kind}
}

// Key identifies the object across API versions ("group/kind/namespace/name"): the same
// object read as apps/v1 and apps/v1beta1 has one key.
func (r Ref) Key() string { return KeyOf(r.GroupKind(), r.Namespace, r.Name) }

// KeyOf is the Key of the object of group-kind gk named namespace/name.
func KeyOf(gk schema.GroupKind, namespace, name string) string {
	return gk.Group + "/" + gk.Kind + "/" + namespace + "/" + name
}

// Compare orders references by namespace (cluster-scoped first), kind, name and apiVersion,
// the order in which objects are listed everywhere (after their apply stage or category).
func Compare(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Name, b.Name), cmp.Compare(a.APIVersion, b.APIVersion))
}
