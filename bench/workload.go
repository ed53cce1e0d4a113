package main

import (
	"fmt"

	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// trainingFile is generated workload file i: a single-node training Job with 1 GPU and a
// small CPU and memory request; names, priorities, pools, images and arguments vary.
func trainingFile(i int) string {
	priorities := []string{"low", "medium", "high"}
	gpuTypes := []string{"A100-80G", "H100-80G", "L40S"}
	return fmt.Sprintf(`kind: training
version: v0.1
job: {name: train-%05d, priority: %s, description: "benchmark run %d"}
environment:
  image: registry.example.com/trainer:v1.%d
  command: [python, train.py, --seed, "%d", --lr, "%de-5"]
  env: [{name: RUN_ID, value: "run-%05d"}]
resources: {pool: training-pool, gpu: 1, gpu-type: %s, cpu: 2, memory: 8Gi}
storage:
  workdirs: [{path: /datasets/set-%02d}, {path: /output/train-%05d}]
`, i, priorities[i%3], i, i%7, i, 1+i%9, i, gpuTypes[i%3], i%20, i)
}

// workload is one N's objects: the rendered Jobs (suspended, namespace unset) and the
// cluster-scoped objects the render added (PriorityClasses), which are created once, untimed,
// outside every engine.
type workload struct {
	jobs    []*unstructured.Unstructured
	shared  []*unstructured.Unstructured
	dropped map[string]int // kinds dropped, with counts
}

// renderWorkload generates n training files in memory, renders them with gpuctl's renderer,
// keeps the Jobs with spec.suspend: true and sets the cluster-scoped rest aside.
func renderWorkload(n int) (*workload, error) {
	fs := filesys.MakeFsInMemory()
	for i := 0; i < n; i++ {
		dir := fmt.Sprintf("/repo/team-%02d", i%20)
		if err := fs.MkdirAll(dir); err != nil {
			return nil, err
		}
		if err := fs.WriteFile(fmt.Sprintf("%s/train-%05d.yaml", dir, i), []byte(trainingFile(i))); err != nil {
			return nil, err
		}
	}
	res, err := render.New(render.Options{}).Render(fs, "/repo")
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	w := &workload{dropped: map[string]int{}}
	for _, o := range res.Objects {
		switch {
		case o.GetKind() == "Job" && o.GroupVersionKind().Group == "batch":
			// Suspended: the Job controller creates no pods, so thousands of pods do not
			// skew the timings. Every engine applies the same suspended Jobs.
			if err := unstructured.SetNestedField(o.Object, true, "spec", "suspend"); err != nil {
				return nil, err
			}
			w.jobs = append(w.jobs, o)
		case o.GetKind() == "PriorityClass":
			w.shared = append(w.shared, o)
		default:
			w.dropped[o.GetKind()]++
		}
	}
	if len(w.jobs) != n {
		return nil, fmt.Errorf("render gave %d Jobs for %d files", len(w.jobs), n)
	}
	return w, nil
}

// copyInto returns deep copies of objs in namespace ns.
func copyInto(objs []*unstructured.Unstructured, ns string) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		c := o.DeepCopy()
		c.SetNamespace(ns)
		out[i] = c
	}
	return out
}
