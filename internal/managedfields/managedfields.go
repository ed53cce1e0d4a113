package managedfields

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels returns the label keys that a field manager owns: through apply only with applyOnly,
// else through any operation.
func Labels(entries []metav1.ManagedFieldsEntry, manager string, applyOnly bool) map[string]bool {
	out := map[string]bool{}
	for _, mf := range entries {
		if mf.Manager != manager || (applyOnly && mf.Operation != metav1.ManagedFieldsOperationApply) || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Labels map[string]any `json:"f:labels"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
			continue
		}
		for k := range fields.Metadata.Labels {
			if name, ok := strings.CutPrefix(k, "f:"); ok {
				out[name] = true
			}
		}
	}
	return out
}

// Owns reports whether a field manager owns the field at path (field names, as in "spec",
// "suspend"), through any operation: its field set names the field itself or, for an inner
// field, its "." member.
func Owns(entries []metav1.ManagedFieldsEntry, manager string, path ...string) bool {
	for _, mf := range entries {
		if mf.Manager != manager || mf.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(mf.FieldsV1.Raw, &set) != nil {
			continue
		}
		for i, name := range path {
			sub, ok := set["f:"+name].(map[string]any)
			if !ok {
				break
			}
			if i == len(path)-1 {
				if _, dot := sub["."]; dot || len(sub) == 0 {
					return true // a leaf, or an inner field owned itself
				}
				break // only fields below it
			}
			set = sub
		}
	}
	return false
}
