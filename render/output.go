package render

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// MarshalYAML writes objects as a multi-document YAML stream ready for kubectl apply -f -.
// Keys are sorted, so equal objects give equal bytes.
func MarshalYAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := sigsyaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// MarshalJSON writes objects as a Kubernetes v1 List, as kubectl get -o json does.
func MarshalJSON(objs []*unstructured.Unstructured) ([]byte, error) {
	items := make([]map[string]any, len(objs))
	for i, o := range objs {
		items[i] = o.Object
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	b, err := json.MarshalIndent(list, "", "    ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
