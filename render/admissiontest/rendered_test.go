package admissiontest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/render"
)

// renderTree renders a tree and fails the test with every diagnostic if it does not render.
func renderTree(t *testing.T, fs filesys.FileSystem, path string) []*unstructured.Unstructured {
	t.Helper()
	res, err := render.New(render.Options{}).Render(fs, path)
	if err != nil {
		var ve *render.ValidationError
		if errors.As(err, &ve) {
			for _, d := range res.Errors() {
				t.Error(d)
			}
		}
		t.Fatalf("render %s: %v", path, err)
	}
	return res.Objects
}

// applyAndWaitForPods applies rendered objects as the admin and waits until every workload
// among them has a pod: the workload passed the policy, and so did the pods (and ReplicaSets)
// that its controller created after the API server's defaulting.
func applyAndWaitForPods(t *testing.T, e *env, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The policy under test is the one setup applied; the render's own (the same rules, from
	// this tree's configuration) would replace it for the tests that run after this one.
	objs = slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool {
		return strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy")
	})
	if err := e.apply(ctx, objs); err != nil {
		t.Fatal(err)
	}
	workloads := 0
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment", "StatefulSet", "Job":
			workloads++
			if err := e.waitPods(ctx, o.GetNamespace(), o.GetName()); err != nil {
				t.Error(err)
			}
		}
	}
	if workloads == 0 {
		t.Fatal("nothing rendered a workload")
	}
}

// TestRenderedTrainingJobAllowed: gpuctl's own Job for a training document in a tenant
// directory, with a read-only workdir under /datasets and a writable one under /output, is
// allowed and its pod is created.
func TestRenderedTrainingJobAllowed(t *testing.T) {
	e := setup(t)
	fs, err := render.MemFS("/repo", map[string]string{
		".gpuctl.yaml": "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"teams/alice/train.yaml": `kind: training
version: v0.1
job:
  name: admitted-training
  priority: medium
environment:
  image: pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime
  command: ["python", "/datasets/imagenet/train.py"]
resources:
  gpu: 1
storage:
  workdirs:
    - path: /datasets/imagenet
    - path: /output/alice/run-1
`,
	})
	if err != nil {
		t.Fatal(err)
	}
	applyAndWaitForPods(t, e, renderTree(t, fs, "/repo"))
}

// TestExamplesAllowed: everything gpuctl renders for examples/teams (alice and bob) is
// allowed, and every workload gets its pods.
func TestExamplesAllowed(t *testing.T) {
	e := setup(t)
	applyAndWaitForPods(t, e, renderTree(t, filesys.MakeFsOnDisk(), "../../examples/teams"))
}
