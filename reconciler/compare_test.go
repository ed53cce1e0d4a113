package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func withHash(u *unstructured.Unstructured, h string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{keys.AppliedHash: h})
	return u
}

func TestUpToDate(t *testing.T) {
	desired := func() map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "a"},
			"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "image": "x:1",
					"resources": map[string]any{"limits": map[string]any{"cpu": "0.5", "memory": "1Gi"}}}}}}}}
	}
	type testCase struct {
		live     func(map[string]any)
		liveHash string
		want     bool
	}
	cases := map[string]testCase{
		"identical":                 {live: func(map[string]any) {}, want: true},
		"server defaults added":     {live: func(m map[string]any) { spec(m)["progressDeadlineSeconds"] = int64(600) }, want: true},
		"quantity normalized":       {live: func(m map[string]any) { limits(m)["cpu"] = "500m" }, want: true},
		"number as float":           {live: func(m map[string]any) { spec(m)["replicas"] = float64(2) }, want: true},
		"replicas changed by hand":  {live: func(m map[string]any) { spec(m)["replicas"] = int64(5) }, want: false},
		"image changed":             {live: func(m map[string]any) { container(m)["image"] = "x:2" }, want: false},
		"container added":           {live: func(m map[string]any) { addContainer(m) }, want: false},
		"desired changed since":     {live: func(map[string]any) {}, liveHash: "old", want: false},
		"strings never quantities":  {live: func(m map[string]any) { container(m)["image"] = "x:1.0" }, want: false},
		"field missing in live":     {live: func(m map[string]any) { delete(limits(m), "memory") }, want: false},
		"type changed (map to str)": {live: func(m map[string]any) { spec(m)["template"] = "x" }, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := obj(desired())
			h := appliedHash(d)
			d = withHash(d, h)
			lm := desired()
			tc.live(lm)
			lh := h
			if tc.liveHash != "" {
				lh = tc.liveHash
			}
			l := withHash(obj(lm), lh)
			if got := (&Manager{opts: DefaultOptions()}).upToDate(d, l); got != tc.want {
				t.Fatalf("upToDate = %v, want %v", got, tc.want)
			}
		})
	}
}

func spec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
func container(m map[string]any) map[string]any {
	return spec(m)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}
func limits(m map[string]any) map[string]any {
	return container(m)["resources"].(map[string]any)["limits"].(map[string]any)
}
func addContainer(m map[string]any) {
	ps := spec(m)["template"].(map[string]any)["spec"].(map[string]any)
	ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "sidecar"})
}

func TestAppliedHashIgnoresItself(t *testing.T) {
	a := obj(map[string]any{"kind": "X", "metadata": map[string]any{"name": "a"}})
	h := appliedHash(a)
	b := withHash(a.DeepCopy(), h)
	if appliedHash(b) != h {
		t.Fatal("the hash annotation changes the hash")
	}
	a.SetLabels(map[string]string{"x": "y"})
	if appliedHash(a) == h {
		t.Fatal("a new label does not change the hash")
	}
}

// TestHashIsThatOfMarshal: the applied-hash is the SHA-256 of json.Marshal's bytes, whatever
// the encoder that computes it (live objects carry hashes made by earlier versions).
func TestHashIsThatOfMarshal(t *testing.T) {
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "annotations": map[string]any{"x": "<&>"}},
			"data": map[string]any{"k": "line\nnext", "z": "ü"}},
		{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j"}, "spec": map[string]any{"parallelism": int64(3),
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "args": []any{"a", 1.5, true, nil}}}}}}},
	} {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got, want := hashOf(&unstructured.Unstructured{Object: obj}), hex.EncodeToString(sum[:16]); got != want {
			t.Errorf("%v: hash %s, want %s (json.Marshal's)", obj["kind"], got, want)
		}
	}
}

// BenchmarkHash: hashOf of a Job as the render gives it, against json.Marshal + SHA-256 (what
// it replaced): the plan hashes every desired object.
func BenchmarkHash(b *testing.B) {
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "train-00042", "namespace": "team-a", "labels": map[string]any{"g8s.host/job-type": "training", "app.kubernetes.io/managed-by": "gpuctl"},
			"annotations": map[string]any{"gpuctl.io/source": "jobs/train-00042.yaml"}},
		"spec": map[string]any{"suspend": true, "backoffLimit": int64(0), "template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "train", "image": "registry.example.com/llama-factory:v0.8.0",
				"command":   []any{"llamafactory-cli", "train", "--stage", "sft", "--seed", "42"},
				"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}, "requests": map[string]any{"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}}}}}}}}
	u := &unstructured.Unstructured{Object: job}
	b.Run("hashOf", func(b *testing.B) {
		for b.Loop() {
			hashOf(u)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			data, _ := json.Marshal(job)
			sum := sha256.Sum256(data)
			_ = hex.EncodeToString(sum[:16])
		}
	})
}
