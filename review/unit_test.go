package review

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/markdown"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParsePolicyErrors(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []string
	}{
		"valid": {in: "version: v0.1\nmaxGPUsPerJob: 8\nhighPriorityTeams: []\n"},
		"unknown field": {in: "version: v0.1\nmaxGPUPerJob: 8\n",
			want: []string{"gpuctl-policy.yaml:2: field maxGPUPerJob not found in the policy"}},
		"wrong type": {in: "version: v0.1\nmaxGPUsPerJob: lots\n",
			want: []string{"gpuctl-policy.yaml:2: cannot unmarshal !!str `lots` into int"}},
		"version": {in: "version: v9\n", want: []string{`gpuctl-policy.yaml:1: version: unsupported version "v9"`}},
		"severity": {in: "version: v0.1\nseverity:\n  quota: fatal\n  nope: off\n",
			want: []string{`gpuctl-policy.yaml:3: severity.quota: "fatal" is not error, warning or off`, `gpuctl-policy.yaml:4: severity: unknown rule "nope"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := ParsePolicy(PolicyFile, []byte(tc.in))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if !p.restrictHigh {
					t.Error("highPriorityTeams: [] must restrict priority high to no team")
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestImageAllowed(t *testing.T) {
	allowed := []string{"registry.example.com", "docker.io/library", "ghcr.io/acme/"}
	cases := map[string]bool{
		"registry.example.com/vllm:v1":      true,
		"registry.example.com:5000/x":       false,
		"nginx:1.27":                        true,
		"library/nginx":                     true,
		"jupyter/pytorch-notebook:latest":   false,
		"ghcr.io/acme/trainer@sha256:abc":   true,
		"ghcr.io/acme-evil/trainer":         false,
		"registry.example.com.evil.io/x:v1": false,
	}
	for image, want := range cases {
		if got := imageAllowed(image, allowed); got != want {
			t.Errorf("imageAllowed(%q) = %v, want %v", image, got, want)
		}
	}
}

// TestCompareFieldDiff: a changed object carries its changed leaf fields, printed with
// object.Display (numbers by value, maps as JSON).
func TestCompareFieldDiff(t *testing.T) {
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "team"}, "spec": spec}}
	}
	a := obj(map[string]any{"replicas": int64(1), "keep": "x", "gone": "y", "list": []any{"a"}})
	b := obj(map[string]any{"replicas": float64(2), "keep": "x", "new": map[string]any{"k": "v"}, "list": []any{"a", "b"}})
	diffs := Compare([]*unstructured.Unstructured{a}, []*unstructured.Unstructured{b})
	if len(diffs) != 1 || diffs[0].Action != DiffChanged || diffs[0].Ref.String() != "ConfigMap team/c" {
		t.Fatalf("diffs %+v", diffs)
	}
	var lines []string
	for _, f := range diffs[0].Fields {
		lines = append(lines, fmt.Sprintf("%s: %s → %s", f.Path, object.Display(f.Old), object.Display(f.New)))
	}
	want := "spec.gone: y → <none>\nspec.list[1]: <none> → b\nspec.new: <none> → {\"k\":\"v\"}\nspec.replicas: 1 → 2"
	if strings.Join(lines, "\n") != want {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), want)
	}
	if got, want := strings.Join(fieldLines(diffs[0]), "\n"), "- spec.gone: y\n+ spec.list[1]: b\n+ spec.new: {\"k\":\"v\"}\n- spec.replicas: 1\n+ spec.replicas: 2"; got != want {
		t.Errorf("fieldLines\n%s\nwant\n%s", got, want)
	}
}

// A huge change must stay under the comment limit, with a note saying what was left out.
func TestMarkdownHugeDiffIsTruncated(t *testing.T) {
	base := &Revision{Name: "base", Files: map[string]string{}}
	head := &Revision{Name: "head", Files: map[string]string{}}
	for i := 0; i < 2000; i++ {
		head.Files[fmt.Sprintf("jobs/job-%04d.yaml", i)] = fmt.Sprintf(
			"kind: training\nversion: v0.1\njob: {name: job-%04d}\nenvironment: {image: pytorch}\nresources: {gpu: 1}\n", i)
	}
	rep, err := Compose(base, head, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) < 2000 {
		t.Fatalf("%d changes", len(rep.Changes))
	}
	md := Markdown(rep, MarkdownOptions{Command: "gpuctl diff --base main"})
	if len(md) >= markdown.MaxChars {
		t.Fatalf("markdown is %d characters", len(md))
	}
	if !strings.Contains(md, "more changed objects are not shown (comment size limit). Run `gpuctl diff --base main` for the full diff.") {
		t.Errorf("no truncation note:\n%s", md[len(md)-500:])
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Error("a <details> block was cut")
	}
	small := Markdown(rep, MarkdownOptions{MaxChars: 3000})
	if len(small) > 3000 || !strings.Contains(small, "✂️") {
		t.Errorf("MaxChars 3000: %d characters", len(small))
	}
}

func TestPodWorkloadOf(t *testing.T) {
	gpus := func(n int) map[string]any {
		return map[string]any{"limits": map[string]any{"nvidia.com/gpu": fmt.Sprint(n)}}
	}
	container := func(image string, n int) map[string]any {
		return map[string]any{"name": image, "image": image, "resources": gpus(n)}
	}
	pod := func(extra map[string]any, cs ...any) map[string]any {
		spec := map[string]any{"containers": cs}
		for k, v := range extra {
			spec[k] = v
		}
		return spec
	}
	tmpl := func(spec map[string]any) map[string]any { return map[string]any{"spec": spec} }
	cases := map[string]struct {
		obj         map[string]any
		gpus        int64
		images      string
		priority    string
		notWorkload bool
	}{
		"Pod": {obj: map[string]any{"kind": "Pod", "spec": pod(map[string]any{"priorityClassName": "gpuctl-high"}, container("a", 2))},
			gpus: 2, images: "a", priority: "gpuctl-high"},
		"Deployment replicas": {obj: map[string]any{"kind": "Deployment", "spec": map[string]any{"replicas": int64(3),
			"template": tmpl(pod(nil, container("a", 2), container("b", 1)))}}, gpus: 9, images: "a b"},
		"ReplicationController": {obj: map[string]any{"kind": "ReplicationController", "spec": map[string]any{"replicas": int64(2),
			"template": tmpl(pod(nil, container("a", 4)))}}, gpus: 8, images: "a"},
		"DaemonSet counts one pod": {obj: map[string]any{"kind": "DaemonSet", "spec": map[string]any{
			"template": tmpl(pod(nil, container("a", 8)))}}, gpus: 8, images: "a"},
		"CronJob parallelism": {obj: map[string]any{"kind": "CronJob", "spec": map[string]any{"jobTemplate": map[string]any{
			"spec": map[string]any{"parallelism": int64(4), "template": tmpl(pod(nil, container("a", 8)))}}}}, gpus: 32, images: "a"},
		"a larger init container wins": {obj: map[string]any{"kind": "Job", "spec": map[string]any{
			"template": tmpl(pod(map[string]any{"initContainers": []any{container("init", 64)}}, container("a", 1)))}}, gpus: 64, images: "init a"},
		"sidecars add to the containers": {obj: map[string]any{"kind": "Job", "spec": map[string]any{
			"template": tmpl(pod(map[string]any{"initContainers": []any{
				map[string]any{"name": "side", "image": "a", "restartPolicy": "Always", "resources": gpus(3)}}}, container("a", 1)))}}, gpus: 4, images: "a"},
		"ephemeral containers' images": {obj: map[string]any{"kind": "Pod", "spec": pod(map[string]any{
			"ephemeralContainers": []any{map[string]any{"name": "dbg", "image": "busybox"}}}, container("a", 0))}, images: "a busybox"},
		"Service": {obj: map[string]any{"kind": "Service", "spec": map[string]any{}}, notWorkload: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w, ok := podWorkloadOf(&unstructured.Unstructured{Object: tc.obj})
			if ok == tc.notWorkload {
				t.Fatalf("ok = %v", ok)
			}
			if w.GPUs != tc.gpus || strings.Join(w.Images, " ") != tc.images || w.PriorityClass != tc.priority {
				t.Errorf("got %d GPUs, images %q, priority %q; want %d, %q, %q", w.GPUs, w.Images, w.PriorityClass, tc.gpus, tc.images, tc.priority)
			}
		})
	}
}

// TestObjectDiffJSON: an object's diff keeps its JSON shape, the object's fields flat.
func TestObjectDiffJSON(t *testing.T) {
	d := ObjectDiff{Action: DiffChanged, Ref: object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"},
		Source: "web.yaml", GPUsBefore: 1, GPUsAfter: 2, Fields: []object.FieldDiff{{Path: "spec.replicas", Old: int64(1), New: int64(2)}}}
	b, err := json.Marshal(d)
	want := `{"action":"changed","apiVersion":"apps/v1","kind":"Deployment","namespace":"team","name":"web","source":"web.yaml",` +
		`"gpusBefore":1,"gpusAfter":2,"fields":[{"path":"spec.replicas","old":1,"new":2}]}`
	if err != nil || string(b) != want {
		t.Errorf("got %s (%v)\nwant %s", b, err, want)
	}
}

// The budget's teams are the namespaces with a quota: the GPUs of a namespace without one
// (default) are in its lines, not in the team table.
func TestBudgetTeamsHaveQuotas(t *testing.T) {
	job := func(ns string, gpus int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "j", "namespace": ns},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "c", "resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": gpus}}}}}}}}}
		return u
	}
	quota := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": "q", "namespace": "alice"}, "spec": map[string]any{"hard": map[string]any{"requests.nvidia.com/gpu": "8"}}}}
	b := ComputeBudget(nil, []*unstructured.Unstructured{job("alice", 4), job("default", 2), quota})
	if len(b.Teams) != 1 || b.Teams[0].Namespace != "alice" || b.Teams[0].After != 4 {
		t.Errorf("teams %+v, want alice alone", b.Teams)
	}
	if len(b.Lines) != 2 || b.After != 6 {
		t.Errorf("lines %+v (after %d), want alice's and default's 6 GPUs", b.Lines, b.After)
	}
}
