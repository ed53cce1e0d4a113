package testcluster

import (
	_ "embed"
	"os"
	"path/filepath"
)

// Node annotation that marks a node as fake and managed by kwok.
const (
	// KwokAnnotation is the annotation key kwok selects the nodes it manages by.
	KwokAnnotation = "kwok.x-k8s.io/node"
	// KwokAnnotationValue is the value of KwokAnnotation on every fake node.
	KwokAnnotationValue = "fake"
)

// kwokConfig is kwok's --config: its options and the Stage objects that drive node and pod
// status (see the comment at the top of kwok.yaml).
//
//go:embed kwok.yaml
var kwokConfig []byte

// kwokArgs writes the kwok configuration into dir and returns kwok's command line.
func kwokArgs(dir, kubeconfig string) ([]string, error) {
	path := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(path, kwokConfig, 0o644); err != nil {
		return nil, err
	}
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + path,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokAnnotation + "=" + KwokAnnotationValue,
	}, nil
}
