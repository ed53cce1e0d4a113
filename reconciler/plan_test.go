package reconciler

import (
	"testing"

	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func gpuJob(name string, gpus int64) *unstructured.Unstructured {
	return obj(map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name, "namespace": "team"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "c", "resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": gpus}}}}}}}})
}

// TestFailedChangesAreNotApplied: a failed change is left out of what the plan holds the
// cluster to (Accepted), out of the counts of its action, and out of the GPU forecast.
func TestFailedChangesAreNotApplied(t *testing.T) {
	ok, bad, live := gpuJob("ok", 1), gpuJob("bad", 8), gpuJob("bad", 2)
	failed := &Change{Object: object.RefOf(bad), Desired: bad, Live: live, Action: ActionUpdate}
	failed.fail("dry-run apply: %s", "refused")
	p := &Plan{Changes: []*Change{{Object: object.RefOf(ok), Desired: ok, Action: ActionCreate}, failed}}
	if got := p.Accepted([]*unstructured.Unstructured{ok, bad}); len(got) != 1 || got[0] != ok {
		t.Fatalf("accepted %v", got)
	}
	if p.Count(ActionSkipped) != 0 || len(p.Failed()) != 1 || failed.Writes() {
		t.Fatalf("skipped %d, failed %d, writes %v", p.Count(ActionSkipped), len(p.Failed()), failed.Writes())
	}
	p.GPUs = gpuDeltas(p.Changes)
	if got := gpuSummary(p.GPUs); got != "+1 in default" {
		t.Fatalf("GPUs %q: the failed change's 8 GPUs must not count, nor its live 2 go", got)
	}
	if got := p.Summary(); got != "1 to create, 1 failed; GPUs: +1 in default" {
		t.Fatalf("summary %q", got)
	}
}
