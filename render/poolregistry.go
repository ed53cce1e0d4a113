package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The pool registry: one ConfigMap for each pool file, named gpuctl-pool-<name>
// (keys.PoolRegistryPrefix) in the system namespace and labelled g8s.host/pool-registry=true,
// that records the pool as Git declares it even when its nodes do not exist. buildPool writes
// it with PoolRecord.ConfigMap; package cluster reads it back with DecodePoolRecord. This file
// is the one place that knows its labels, data keys and encoding.

// The data keys of a registry ConfigMap, and the value of its g8s.host/pool-registry label.
const (
	poolDataName        = "name"
	poolDataDescription = "description"
	poolDataNodes       = "nodes" // JSON: [{"name", "gpuType"}], in file order
	poolRegistryMark    = "true"
)

// PoolRegistrySelector is the label selector of the registry ConfigMaps.
const PoolRegistrySelector = keys.PoolRegistry + "=" + poolRegistryMark

// IsPoolRegistry reports whether an object with these labels is a registry ConfigMap.
func IsPoolRegistry(labels map[string]string) bool {
	return labels[keys.PoolRegistry] == poolRegistryMark
}

// IsPoolRegistryObject reports whether u is a registry ConfigMap: a ConfigMap of the core
// group marked as one.
func IsPoolRegistryObject(u *unstructured.Unstructured) bool {
	return u.GetKind() == "ConfigMap" && u.GroupVersionKind().Group == "" && object.LabelOf(u, keys.PoolRegistry) == poolRegistryMark
}

// PoolRecord is one pool as the pool registry records it.
type PoolRecord struct {
	Name        string
	Description string
	// Nodes are the nodes of the pool file, in file order.
	Nodes []PoolRegistryEntry
}

// PoolRegistryEntry is how one node of a pool is recorded in the pool registry.
type PoolRegistryEntry struct {
	Name    string `json:"name"`
	GPUType string `json:"gpuType,omitempty"`
}

// ConfigMap encodes the record as its registry ConfigMap in namespace, annotated with the
// file it was rendered from.
func (p PoolRecord) ConfigMap(namespace, source string) *corev1.ConfigMap {
	entries := p.Nodes
	if entries == nil {
		entries = []PoolRegistryEntry{}
	}
	nodes, _ := json.Marshal(entries) // cannot fail: strings only
	labels := managedLabels()
	labels[keys.PoolRegistry] = poolRegistryMark
	labels[keys.Pool] = p.Name
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: keys.PoolRegistryPrefix + p.Name, Namespace: namespace,
			Labels: labels, Annotations: map[string]string{keys.Source: source}},
		Data: map[string]string{poolDataName: p.Name, poolDataDescription: p.Description, poolDataNodes: string(nodes)},
	}
}

// DecodePoolRecord reads a registry ConfigMap. A ConfigMap without a name in its data is the
// pool of its own name (gpuctl-pool-<name>). Nodes is never nil: when the node list does not
// parse, DecodePoolRecord returns the record without nodes and the error.
func DecodePoolRecord(cm *corev1.ConfigMap) (PoolRecord, error) {
	p := PoolRecord{Name: cm.Data[poolDataName], Description: cm.Data[poolDataDescription],
		Nodes: []PoolRegistryEntry{}}
	if p.Name == "" {
		p.Name = strings.TrimPrefix(cm.Name, keys.PoolRegistryPrefix)
	}
	if raw := cm.Data[poolDataNodes]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &p.Nodes); err != nil {
			p.Nodes = []PoolRegistryEntry{}
			return p, fmt.Errorf("pool registry %s/%s: %s: %w", cm.Namespace, cm.Name, poolDataNodes, err)
		}
		if p.Nodes == nil { // "null"
			p.Nodes = []PoolRegistryEntry{}
		}
	}
	return p, nil
}
