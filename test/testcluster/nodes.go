package testcluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// Defaults of a NodeSpec that leaves CPU or Memory empty.
const (
	defaultNodeCPU    = "32"
	defaultNodeMemory = "256Gi"
	nodePods          = "110"
)

// nodeReadyTimeout bounds how long AddNode waits for a node to become Ready.
const nodeReadyTimeout = 60 * time.Second

// NodeSpec describes one fake GPU node.
type NodeSpec struct {
	// Name is the node's name and its kubernetes.io/hostname label.
	Name string `json:"name"`
	// GPUs is the node's nvidia.com/gpu capacity; 0 makes a node without GPUs or GPU labels.
	GPUs int `json:"gpus,omitempty"`
	// GPUProduct is the g8s.host/gpu-product label, e.g. NVIDIA-A100-SXM4-80GB.
	GPUProduct string `json:"gpuProduct,omitempty"`
	// GPUType is the g8s.host/gpu-type label, e.g. a100-80g.
	GPUType string `json:"gpuType,omitempty"`
	// CPU is the cpu capacity as a quantity; 32 if empty.
	CPU string `json:"cpu,omitempty"`
	// Memory is the memory capacity as a quantity; 256Gi if empty.
	Memory string `json:"memory,omitempty"`
	// Labels are extra node labels; they win over the generated ones.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are the node's taints, e.g. to keep other tests' pods off a node of one test.
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// DefaultNodes returns the fake nodes of a cluster whose Options name none. The same list is
// documented in testdata/nodes.yaml.
func DefaultNodes() []NodeSpec {
	a100 := func(name string) NodeSpec {
		return NodeSpec{Name: name, GPUs: 8, GPUProduct: "NVIDIA-A100-SXM4-80GB", GPUType: "a100-80g", CPU: "128", Memory: "1Ti"}
	}
	return []NodeSpec{
		a100("gpu-a100-0"),
		a100("gpu-a100-1"),
		{Name: "gpu-h100-0", GPUs: 8, GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUType: "h100-80g", CPU: "128", Memory: "1Ti"},
		{Name: "gpu-t4-0", GPUs: 4, GPUProduct: "Tesla-T4", GPUType: "t4-16g", CPU: "32", Memory: "256Gi"},
		// A node in no pool, for CPU services of the default pool.
		{Name: "cpu-0", CPU: "64", Memory: "256Gi"},
	}
}

// LoadNodes reads a YAML list of NodeSpecs (the format of testdata/nodes.yaml) and validates it.
func LoadNodes(path string) ([]NodeSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var nodes []NodeSpec
	if err := yaml.UnmarshalStrict(data, &nodes); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := validateNodes(nodes); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nodes, nil
}

// validateNodes checks that every spec builds a valid Node and that names are unique.
func validateNodes(nodes []NodeSpec) error {
	seen := map[string]bool{}
	for _, n := range nodes {
		if _, err := n.node(); err != nil {
			return err
		}
		if seen[n.Name] {
			return fmt.Errorf("node %q is listed twice", n.Name)
		}
		seen[n.Name] = true
	}
	return nil
}

// node builds the Node object kwok will manage. It carries the not-ready taint a kubelet
// registers with; the node lifecycle controller removes it once kwok reports the node Ready.
func (s NodeSpec) node() (*corev1.Node, error) {
	if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 {
		return nil, fmt.Errorf("node name %q: %s", s.Name, strings.Join(errs, "; "))
	}
	resources, err := s.resources()
	if err != nil {
		return nil, err
	}
	labels := s.labels()
	for k, v := range labels {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("node %s: label %s=%q: %s", s.Name, k, v, strings.Join(errs, "; "))
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        s.Name,
			Labels:      labels,
			Annotations: map[string]string{KwokAnnotation: KwokAnnotationValue, "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{Taints: append([]corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, s.Taints...)},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Phase:       corev1.NodePending,
		},
	}, nil
}

// labels returns the node's labels: kwok's type, hostname, OS and architecture, the GPU count,
// the other gpuctl GPU labels when it has GPUs, then Labels.
func (s NodeSpec) labels() map[string]string {
	l := map[string]string{
		"type":                 "kwok",
		corev1.LabelHostname:   s.Name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
	}
	l[keys.GPUCount] = strconv.Itoa(s.GPUs)
	if s.GPUs > 0 {
		if s.GPUType != "" {
			l[keys.GPUType] = s.GPUType
		}
		if s.GPUProduct != "" {
			l[keys.GPUProduct] = s.GPUProduct
		}
	}
	maps.Copy(l, s.Labels)
	return l
}

// resources returns the node's capacity, which is also its allocatable.
func (s NodeSpec) resources() (corev1.ResourceList, error) {
	cpu, memory := s.CPU, s.Memory
	if cpu == "" {
		cpu = defaultNodeCPU
	}
	if memory == "" {
		memory = defaultNodeMemory
	}
	if s.GPUs < 0 {
		return nil, fmt.Errorf("node %s: negative gpus %d", s.Name, s.GPUs)
	}
	list := corev1.ResourceList{corev1.ResourcePods: resource.MustParse(nodePods)}
	for name, value := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory} {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("node %s: %s %q: %w", s.Name, name, value, err)
		}
		list[name] = q
	}
	if s.GPUs > 0 {
		list[keys.ResourceGPU] = *resource.NewQuantity(int64(s.GPUs), resource.DecimalSI)
	}
	return list, nil
}

// AddNode creates a fake node and waits until it is Ready and untainted.
func (c *Cluster) AddNode(ctx context.Context, spec NodeSpec) error {
	if err := c.createNodes(ctx, []NodeSpec{spec}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, nodeReadyTimeout)
	defer cancel()
	return c.waitNodesReady(ctx, []string{spec.Name})
}

// DeleteNode deletes a node; a node that does not exist is not an error. Pods bound to it are
// removed by the pod garbage collector some seconds later.
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	err := c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	return nil
}

// createNodes creates the Node objects of specs.
func (c *Cluster) createNodes(ctx context.Context, specs []NodeSpec) error {
	for _, s := range specs {
		n, err := s.node()
		if err != nil {
			return err
		}
		if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: keys.NodeLabelerFieldManager}); err != nil {
			return fmt.Errorf("create node %s: %w", s.Name, err)
		}
	}
	return nil
}

// waitNodesReady waits until every named node is Ready and carries no startup taint.
func (c *Cluster) waitNodesReady(ctx context.Context, names []string) error {
	what := "nodes " + strings.Join(names, ", ") + " to be Ready and untainted"
	return c.waitFor(ctx, what, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if why := nodeNotReady(n); why != "" {
				return false, fmt.Errorf("node %s: %s", name, why)
			}
		}
		return true, nil
	})
}

// nodeNotReady says why a node cannot take pods yet, or returns "".
func nodeNotReady(n *corev1.Node) string {
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return "not Ready"
	}
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") || strings.HasPrefix(t.Key, "node.cloudprovider.kubernetes.io/") {
			return "tainted " + t.Key
		}
	}
	return ""
}
