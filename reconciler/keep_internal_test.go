package reconciler

import (
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestKeepableNeedsGpuctlsRecord: a live Job is kept for an unchanged file only with the same
// spec digest, or with none but gpuctl's applied-hash (made by a gpuctl that recorded no
// digest); one a team made by hand in its place, without them, or with another digest, is not.
func TestKeepableNeedsGpuctlsRecord(t *testing.T) {
	job := func(ann map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job"}}
		u.SetName("sft")
		u.SetAnnotations(ann)
		return u
	}
	desired := job(map[string]string{keys.SpecDigest: "d1", keys.AppliedHash: "h2"})
	for _, tc := range []struct {
		name string
		live map[string]string
		want bool
	}{
		{"same digest", map[string]string{keys.SpecDigest: "d1", keys.AppliedHash: "h1"}, true},
		{"made by an earlier gpuctl", map[string]string{keys.AppliedHash: "h0"}, true},
		{"made by hand", nil, false},
		{"another digest: its file changed", map[string]string{keys.SpecDigest: "d0", keys.AppliedHash: "h1"}, false},
	} {
		if got := keepable(desired, job(tc.live)); got != tc.want {
			t.Errorf("%s: keepable = %v, want %v", tc.name, got, tc.want)
		}
	}
	if keepable(job(map[string]string{keys.AppliedHash: "h2"}), job(map[string]string{keys.AppliedHash: "h0"})) {
		t.Error("a desired object without a spec digest (not a training job's) is kept")
	}
}
