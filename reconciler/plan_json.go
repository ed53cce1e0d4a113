package reconciler

import (
	"encoding/json"

	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// planRef is the JSON form of an object.Ref in a plan and a change set: group and version
// apart ({"group": "apps", "version": "v1", "kind": ..., "namespace": ..., "name": ...}), the
// shape that `gpuctl diff -o json`, `gpuctl sync -o json` and GET /api/v1/plan have always
// written (docs/reconciler.md).
type planRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func planRefOf(r object.Ref) planRef {
	return planRef{Group: r.Group(), Version: r.Version(), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// MarshalJSON writes the change with its object in the plan's form (see planRef).
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change // without this method
	return json.Marshal(struct {
		Object planRef `json:"object"` // shadows plain's Object, and keeps its place: first
		plain
	}{planRefOf(c.Object), plain(c)})
}

// MarshalJSON writes the result with its object in the plan's form (see planRef).
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // without this method
	return json.Marshal(struct {
		Object planRef `json:"object"` // shadows plain's Object, and keeps its place: first
		plain
	}{planRefOf(r.Object), plain(r)})
}

// UnmarshalJSON reads a change that MarshalJSON wrote.
func (c *Change) UnmarshalJSON(b []byte) error {
	type plain Change // without this method
	v := struct {
		Object planRef `json:"object"`
		*plain
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.Object = v.Object.ref()
	return nil
}

// UnmarshalJSON reads a result that MarshalJSON wrote.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result // without this method
	v := struct {
		Object planRef `json:"object"`
		*plain
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.Object = v.Object.ref()
	return nil
}

// ref is the object.Ref that p writes.
func (p planRef) ref() object.Ref {
	return object.Ref{APIVersion: schema.GroupVersion{Group: p.Group, Version: p.Version}.String(),
		Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}
}
