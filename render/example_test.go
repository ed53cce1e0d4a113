package render_test

import (
	"fmt"

	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Render a training job from an in-memory repository and list what it becomes.
func Example() {
	fs := filesys.MakeFsInMemory()
	_ = fs.WriteFile("/repo/train.yaml", []byte(`kind: training
version: v0.1
job: {name: qwen2-sft, priority: high}
environment: {image: registry.example.com/llama-factory:v0.8.0}
resources: {pool: training-pool, gpu: 8, gpu-type: A100-80G, node_count: 2}
`))
	res, err := render.New(render.Options{}).Render(fs, "/repo")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range res.Objects {
		fmt.Println(object.RefOf(o).String())
	}
	// Output:
	// PriorityClass gpuctl-high
	// PriorityClass gpuctl-low
	// PriorityClass gpuctl-medium
	// Service default/svc-qwen2-sft
	// Job default/qwen2-sft
}

// Every problem of every file is reported at once, each with file, line, column and field.
func Example_errors() {
	fs := filesys.MakeFsInMemory()
	_ = fs.WriteFile("/repo/a.yaml", []byte("kind: training\nversion: v0.1\njob: {name: x}\nenvironment: {image: p}\nresources: {gpu_tpye: A100, gpu: -1}\n"))
	_ = fs.WriteFile("/repo/b.yaml", []byte("kind: trainning\nversion: v0.1\n"))
	_, err := render.New(render.Options{}).Render(fs, "/repo")
	fmt.Println(err)
	// Output:
	// 3 errors:
	// /repo/a.yaml:5:13: resources.gpu_tpye: unknown field "gpu_tpye", did you mean "gpu-type"?
	// /repo/a.yaml:5:34: resources.gpu: must be 0 or more, got -1
	// /repo/b.yaml:1:7: kind: unknown kind "trainning", did you mean "training"?
}

// Check an object against the pod policy of a tenant namespace, as render does for every
// object of a tenant directory.
func ExampleCheckPodPolicy() {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"hostNetwork": true,
			"containers":  []any{map[string]any{"name": "c", "image": "nginx", "securityContext": map[string]any{"privileged": true}}},
		}}},
	}}
	var cfg *render.Config // no .gpuctl.yaml: the defaults
	for _, v := range render.CheckPodPolicy(obj, cfg.PodPolicy("alice")) {
		fmt.Println(v)
	}
	// Output:
	// spec.template.spec.hostNetwork: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory
	// spec.template.spec.containers[0].securityContext.privileged: pod policy privileged: privileged containers are not allowed in a tenant directory
}
