package object

import (
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MetaHash is a short hash of an object's labels and annotations: enough to tell that either
// changed, at a fraction of their size. The drift detector keeps it in its metadata cache and
// the engine compares it with the one it saw when it last found the object up to date.
func MetaHash(labels, annotations map[string]string) string {
	h := fnv.New64a()
	for _, kv := range []map[string]string{labels, annotations} {
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			h.Write([]byte(k + "=" + kv[k] + "\n"))
		}
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// AnnotationOf is u's annotation key, read without copying the annotations (GetAnnotations
// copies them all, for one value).
func AnnotationOf(u *unstructured.Unstructured, key string) string {
	s, _ := metaEntry(u, "annotations", key).(string)
	return s
}

// LabelOf is u's label key, read without copying the labels.
func LabelOf(u *unstructured.Unstructured, key string) string {
	s, _ := metaEntry(u, "labels", key).(string)
	return s
}

// HasAnnotation tells whether u has the annotation key, whatever its value.
func HasAnnotation(u *unstructured.Unstructured, key string) bool {
	return hasMetaEntry(u, "annotations", key)
}

// HasLabel tells whether u has the label key, whatever its value.
func HasLabel(u *unstructured.Unstructured, key string) bool { return hasMetaEntry(u, "labels", key) }

// metaEntry is the value of key in u's metadata map field (labels or annotations), nil when
// absent.
func metaEntry(u *unstructured.Unstructured, field, key string) any {
	md, _ := u.Object["metadata"].(map[string]any)
	m, _ := md[field].(map[string]any)
	return m[key]
}

// SetLabel sets u's label key to value in place: SetLabels would copy every label twice. A
// labels field that is not a map of values is replaced, as SetLabels replaces it; so is a
// metadata field that is not a map (SetLabels would leave it, and set nothing).
func SetLabel(u *unstructured.Unstructured, key, value string) { setMetaEntry(u, "labels", key, value) }

// SetAnnotation sets u's annotation key to value in place (see SetLabel).
func SetAnnotation(u *unstructured.Unstructured, key, value string) {
	setMetaEntry(u, "annotations", key, value)
}

func setMetaEntry(u *unstructured.Unstructured, field, key, value string) {
	md, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		u.Object["metadata"] = md
	}
	m, ok := md[field].(map[string]any)
	if !ok {
		m = map[string]any{}
		md[field] = m
	}
	m[key] = value
}

func hasMetaEntry(u *unstructured.Unstructured, field, key string) bool {
	md, _ := u.Object["metadata"].(map[string]any)
	m, _ := md[field].(map[string]any)
	_, ok := m[key]
	return ok
}

// IsNode tells a Node of the core group (in a render's output: a pool's labels for a node).
func IsNode(u *unstructured.Unstructured) bool {
	return KindOf(u) == "Node" && u.GroupVersionKind().Group == ""
}

// GenerationTracksChanges tells the kinds whose metadata.generation grows with every change
// of what gpuctl declares outside metadata. PriorityClass keeps generation 1 whatever changes
// (its API strategy never bumps it); kinds without generations have 0 and are not asked.
func GenerationTracksChanges(gk schema.GroupKind) bool {
	return gk != schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}
}
