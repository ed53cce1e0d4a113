package object

import (
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestGPUs runs each case through GPUs (unstructured) and TypedGPUs (the same object typed):
// both give the same count.
func TestGPUs(t *testing.T) {
	res := func(kv ...string) map[string]any {
		out := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = map[string]any{"nvidia.com/gpu": kv[i+1]}
		}
		return out
	}
	ctr := func(name string, r map[string]any) any {
		return map[string]any{"name": name, "image": name, "resources": r}
	}
	sidecar := func(name string, r map[string]any) any {
		return map[string]any{"name": name, "image": name, "restartPolicy": "Always", "resources": r}
	}
	podSpec := func(inits []any, cs ...any) map[string]any {
		s := map[string]any{"containers": cs}
		if inits != nil {
			s["initContainers"] = inits
		}
		return s
	}
	tmpl := func(spec map[string]any) map[string]any { return map[string]any{"spec": spec} }
	one := podSpec(nil, ctr("a", res("limits", "2")))
	cases := map[string]struct {
		kind string
		spec map[string]any
		gpus int64
	}{
		"Pod, a limit alone":          {"Pod", one, 2},
		"Pod, a request alone":        {"Pod", podSpec(nil, ctr("a", res("requests", "1"))), 1},
		"the request before a limit":  {"Pod", podSpec(nil, ctr("a", res("requests", "1", "limits", "2"))), 1},
		"containers add up":           {"Pod", podSpec(nil, ctr("a", res("limits", "2")), ctr("b", res("limits", "1"))), 3},
		"no GPUs":                     {"Pod", podSpec(nil, ctr("a", nil)), 0},
		"a larger init container":     {"Pod", podSpec([]any{ctr("init", res("limits", "8"))}, ctr("a", res("limits", "1"))), 8},
		"a smaller init container":    {"Pod", podSpec([]any{ctr("init", res("limits", "1"))}, ctr("a", res("limits", "4"))), 4},
		"sidecars add to containers":  {"Pod", podSpec([]any{sidecar("s", res("limits", "3"))}, ctr("a", res("limits", "1"))), 4},
		"init after a sidecar adds":   {"Pod", podSpec([]any{sidecar("s", res("limits", "2")), ctr("i", res("limits", "4"))}, ctr("a", res("limits", "1"))), 6},
		"init before a sidecar alone": {"Pod", podSpec([]any{ctr("i", res("limits", "4")), sidecar("s", res("limits", "2"))}, ctr("a", res("limits", "1"))), 4},
		"Deployment replicas":         {"Deployment", map[string]any{"replicas": int64(3), "template": tmpl(one)}, 6},
		"Deployment, replicas unset":  {"Deployment", map[string]any{"template": tmpl(one)}, 2},
		"StatefulSet scaled to 0":     {"StatefulSet", map[string]any{"replicas": int64(0), "template": tmpl(one)}, 0},
		"ReplicaSet":                  {"ReplicaSet", map[string]any{"replicas": int64(2), "template": tmpl(one)}, 4},
		"ReplicationController":       {"ReplicationController", map[string]any{"replicas": int64(2), "template": tmpl(one)}, 4},
		"DaemonSet counts one pod":    {"DaemonSet", map[string]any{"template": tmpl(one)}, 2},
		"Job parallelism":             {"Job", map[string]any{"parallelism": int64(4), "template": tmpl(one)}, 8},
		"CronJob: one Job":            {"CronJob", map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"parallelism": int64(2), "template": tmpl(one)}}}, 4},
		"Service":                     {"Service", map[string]any{}, 0},
		"a number":                    {"Pod", podSpec(nil, map[string]any{"name": "a", "resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(3)}}}), 3},
		"a quantity with a suffix":    {"Pod", podSpec(nil, ctr("a", res("limits", "2k"))), 2000},
		"a fraction rounds up":        {"Pod", podSpec(nil, ctr("a", res("limits", "500m"))), 1},
		"a sign and zeros":            {"Pod", podSpec(nil, ctr("a", res("limits", "+02"))), 2},
	}
	typed := map[string]func() runtime.Object{
		"Pod": func() runtime.Object { return &corev1.Pod{} }, "Deployment": func() runtime.Object { return &appsv1.Deployment{} },
		"StatefulSet": func() runtime.Object { return &appsv1.StatefulSet{} }, "ReplicaSet": func() runtime.Object { return &appsv1.ReplicaSet{} },
		"ReplicationController": func() runtime.Object { return &corev1.ReplicationController{} },
		"DaemonSet":             func() runtime.Object { return &appsv1.DaemonSet{} }, "Job": func() runtime.Object { return &batchv1.Job{} },
		"CronJob": func() runtime.Object { return &batchv1.CronJob{} }, "Service": func() runtime.Object { return &corev1.Service{} },
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"kind": tc.kind, "metadata": map[string]any{"name": "x"}, "spec": tc.spec}}
			if got := GPUs(u); got != tc.gpus {
				t.Errorf("GPUs = %d, want %d", got, tc.gpus)
			}
			obj := typed[tc.kind]()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
				t.Fatal(err)
			}
			if got := TypedGPUs(obj); got != tc.gpus {
				t.Errorf("TypedGPUs = %d, want %d", got, tc.gpus)
			}
		})
	}
	if GPUs(nil) != 0 {
		t.Error("GPUs(nil) is not 0")
	}
}

func TestPodSpec(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": "CronJob", "spec": map[string]any{"jobTemplate": map[string]any{
		"spec": map[string]any{"parallelism": int64(3), "template": map[string]any{"spec": map[string]any{"priorityClassName": "p"}}}}}}}
	spec, pods, ok := PodSpec(u)
	if !ok || pods != 3 || spec["priorityClassName"] != "p" {
		t.Errorf("PodSpec = %v, %d, %v", spec, pods, ok)
	}
	if _, _, ok := PodSpec(&unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap"}}); ok {
		t.Error("a ConfigMap runs pods")
	}
}

// TestPodRequests checks the effective-request rule on every resource, not only GPUs: a
// container without a request counts its limit, sidecars run beside the containers and
// before later init containers, and the larger of the two phases wins per resource.
func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	res := func(cpu, mem string, gpus int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}}
	}
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: res("500m", "1Gi", 0)},
			{Name: "download", Resources: res("4", "1Gi", 0)},
		},
		Containers: []corev1.Container{
			{Name: "train", Resources: res("2", "8Gi", 4)},
			{Name: "limits-only", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{keys.ResourceGPU: resource.MustParse("2")}}},
		},
	}
	got := PodRequests(spec)
	want := map[corev1.ResourceName]string{
		corev1.ResourceCPU:    "4500m", // the download init container plus the sidecar beats 2.5
		corev1.ResourceMemory: "9Gi",   // containers plus the sidecar beat 2Gi
		keys.ResourceGPU:      "6",     // 4 requested, 2 from a limit
	}
	for name, w := range want {
		q := got[name]
		if q.Cmp(resource.MustParse(w)) != 0 {
			t.Errorf("%s = %s, want %s", name, q.String(), w)
		}
	}
	if n := PodSpecGPUs(spec); n != 6 {
		t.Errorf("PodSpecGPUs = %d, want 6", n)
	}
}

// BenchmarkGPUs: GPUs of a Job as a plan counts it for every object of a sync.
func BenchmarkGPUs(b *testing.B) {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": "Job", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "train", "resources": map[string]any{
			"limits": map[string]any{"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}, "requests": map[string]any{"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}}}}}}}}}
	for b.Loop() {
		if GPUs(u) != 1 {
			b.Fatal("not 1 GPU")
		}
	}
}
