package object

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// How a Secret's values print for people, in every diff, plan, review, drift report and page:
// kubectl diff's spelling. A value that changes is MaskedBefore on the side before the change
// and MaskedAfter on the side after (kubectl's masker), so that a diff still says that it
// changes; any other value, one that stays or that is added or removed, is Masked.
const (
	Masked       = "***"
	MaskedBefore = "*** (before)"
	MaskedAfter  = "*** (after)"
)

// lastAppliedPath is the path of kubectl apply's annotation, which copies the object it
// applied: for a Secret, its values.
const lastAppliedPath = "metadata.annotations." + corev1.LastAppliedConfigAnnotation

// IsSecret reports whether obj is a core/v1 Secret.
func IsSecret(obj map[string]any) bool {
	return obj["kind"] == "Secret" && obj["apiVersion"] == "v1"
}

// secretValue reports whether the field at path of a Secret holds one of its values: a key of
// data or of stringData, or kubectl's last-applied-configuration.
func secretValue(path string) bool {
	return strings.HasPrefix(path, "data.") || strings.HasPrefix(path, "stringData.") || path == lastAppliedPath
}

// aboveSecretValues reports whether the map at path of a Secret may hold its values.
func aboveSecretValues(path string) bool {
	switch path {
	case "", "data", "stringData", "metadata", "metadata.annotations":
		return true
	}
	return false
}

// maskPair returns a and b, the values at path of two versions of a Secret (nil: absent),
// with the Secret's values they hold masked: Masked where a value is the same on both sides or
// is on one side only, MaskedBefore and MaskedAfter where it differs. The maps on the way to
// a value are copied, never changed; other values are returned as they are.
func maskPair(path string, a, b any) (any, any) {
	if secretValue(path) {
		switch {
		case a == nil || b == nil:
			return maskedIf(a, Masked), maskedIf(b, Masked)
		case reflect.DeepEqual(a, b):
			return Masked, Masked
		}
		return MaskedBefore, MaskedAfter
	}
	am, aMap := a.(map[string]any)
	bm, bMap := b.(map[string]any)
	if !aboveSecretValues(path) || (!aMap && !bMap) {
		return a, b
	}
	ac, bc := make(map[string]any, len(am)), make(map[string]any, len(bm))
	for k := range union(am, bm) {
		x, y := maskPair(joinPath(path, k), am[k], bm[k])
		if _, ok := am[k]; ok {
			ac[k] = x
		}
		if _, ok := bm[k]; ok {
			bc[k] = y
		}
	}
	if aMap {
		a = ac
	}
	if bMap {
		b = bc
	}
	return a, b
}

// maskedIf is mask, or nil when v is nil.
func maskedIf(v any, mask string) any {
	if v == nil {
		return nil
	}
	return mask
}

// maskDiffs masks the Secret values that the differences of a Secret carry (see maskPair).
func maskDiffs(out []FieldDiff) {
	for i := range out {
		out[i].Old, out[i].New = maskPair(out[i].Path, out[i].Old, out[i].New)
	}
}

// secretScope is the scope of a diff of a Secret that desired sets: its stringData sets the
// keys of data (the API server moves them there), which count as desired's too.
func secretScope(desired map[string]any) map[string]any {
	sd, _ := desired["stringData"].(map[string]any)
	if len(sd) == 0 || !IsSecret(desired) {
		return desired
	}
	data := map[string]any{}
	for k := range sd {
		data[k] = ""
	}
	if d, ok := desired["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	scope := make(map[string]any, len(desired))
	for k, v := range desired {
		scope[k] = v
	}
	scope["data"] = data
	return scope
}
