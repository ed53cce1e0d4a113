package object_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/object"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// typedObjects are live objects as the API server returns them (defaults, status, server
// fields), of the kinds gpuctl applies, with every kind of value the converter treats apart:
// quantities, times, int-or-strings, bytes, nil and empty maps, pointers, inline structs.
func typedObjects() []runtime.Object {
	created := metav1.NewTime(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: "u-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: created, Labels: map[string]string{"app": name, "gpuctl.io/kind": "training"},
			Annotations: map[string]string{"gpuctl.io/applied-hash": "abc", "gpuctl.io/source": "jobs/a.yaml"}}
	}
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, PriorityClassName: "gpu-high", SchedulerName: "default-scheduler",
			TerminationGracePeriodSeconds: ptr.To[int64](30), DNSPolicy: corev1.DNSClusterFirst,
			NodeSelector: map[string]string{"gpuctl.io/pool": "a100"},
			Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.local/train:1.0", Command: []string{"python", "train.py"},
				Env: []corev1.EnvVar{{Name: "EPOCHS", Value: "10"}, {Name: "EMPTY"}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("64Gi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1G")},
				},
				Ports:                    []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("10Gi"))}}}},
		},
	}
	return []runtime.Object{
		&batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta("train"),
			Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), BackoffLimit: ptr.To[int32](6),
				Suspend: ptr.To(false), CompletionMode: ptr.To(batchv1.NonIndexedCompletion), Template: pod,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u-1"}}},
			Status: batchv1.JobStatus{Active: 2, StartTime: &created}},
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta("serve"),
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Template: pod,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}}},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta("serve"),
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "serve"}, ClusterIP: "10.0.0.7", Type: corev1.ServiceTypeClusterIP,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
					{Name: "grpc", Port: 9000, TargetPort: intstr.FromString("grpc"), Protocol: corev1.ProtocolTCP}}}},
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta("token"),
			Data: map[string][]byte{"token": []byte("s3cr3t\x00\xff"), "empty": {}}, Type: corev1.SecretTypeOpaque},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta("cfg"),
			Data: map[string]string{"a": "1", "b": ""}},
		&corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"}, ObjectMeta: meta("quota"),
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8"), "limits.memory": resource.MustParse("0.5Ti")}}},
		&schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
			ObjectMeta: metav1.ObjectMeta{Name: "gpu-high"}, Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority), Description: "high"},
	}
}

// TestContainsTypedIsContainsOfTheConversion compares ContainsTyped with Contains of the
// converted object on the live objects themselves, on random parts of them and on random
// changes of those parts (values changed, written another way, added, removed, lists grown
// or shrunk, zero values that omitempty leaves out): the two must always agree.
func TestContainsTypedIsContainsOfTheConversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typed := range typedObjects() {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		name := u.GetKind()
		if !object.ContainsTyped(u.DeepCopy(), typed) {
			t.Errorf("%s: the whole object is not found in itself", name)
		}
		trues, falses := 0, 0
		for i := range 3000 {
			d := subset(rng, runtime.DeepCopyJSON(m)).(map[string]any)
			if i%3 != 0 {
				mutate(rng, d)
			}
			desired := &unstructured.Unstructured{Object: d}
			want := object.Contains(desired, u)
			if got := object.ContainsTyped(desired, typed); got != want {
				t.Fatalf("%s: ContainsTyped = %v, Contains of the conversion = %v for\n%v", name, got, want, d)
			}
			if want {
				trues++
			} else {
				falses++
			}
		}
		if trues < 300 || falses < 300 {
			t.Errorf("%s: the cases are one-sided: %d contained, %d not", name, trues, falses)
		}
	}
}

// TestContainsTypedCases names the cases a plan meets.
func TestContainsTypedCases(t *testing.T) {
	job := typedObjects()[0]
	cases := map[string]struct {
		desired map[string]any
		want    bool
	}{
		"quantity written another way": {map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "main", "resources": map[string]any{"requests": map[string]any{"cpu": "0.5", "memory": "1000M"}}}}}}}}, true},
		"quantity changed": {map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "main", "resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(8)}}}}}}}}, false},
		"gpus as a number": {map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(4)}}}}}}}}, true},
		"suspend false is kept (a pointer)": {map[string]any{"spec": map[string]any{"suspend": false}}, true},
		"suspend changed":                   {map[string]any{"spec": map[string]any{"suspend": true}}, false},
		"omitempty zero is absent":          {map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"hostNetwork": false}}}}, false},
		"label removed out of band":         {map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}}}, false},
		"kind":                              {map[string]any{"apiVersion": "batch/v1", "kind": "Job"}, true},
		"another kind":                      {map[string]any{"apiVersion": "batch/v1", "kind": "CronJob"}, false},
		"list longer":                       {map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{}, map[string]any{}}}}}}, false},
		"object where a scalar is":          {map[string]any{"spec": map[string]any{"parallelism": map[string]any{"x": int64(1)}}}, false},
		"scalar where an object is":         {map[string]any{"spec": map[string]any{"template": "x"}}, false},
		"unknown field":                     {map[string]any{"spec": map[string]any{"parallelizm": int64(2)}}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := object.ContainsTyped(&unstructured.Unstructured{Object: tc.desired}, job); got != tc.want {
				t.Errorf("ContainsTyped = %v, want %v", got, tc.want)
			}
		})
	}
}

// subset keeps a random part of a value: some keys of each map (each kept one a subset in
// turn), lists whole in length with each element a subset.
func subset(rng *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if rng.IntN(3) == 0 {
				delete(x, k)
			} else {
				x[k] = subset(rng, e)
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = subset(rng, x[i])
		}
		return x
	}
	return v
}

// zeroValues are fields of the test objects that omitempty leaves out when zero, with their
// zero; a mutation may set one.
var zeroValues = map[string]any{"hostNetwork": false, "activeDeadlineSeconds": int64(0), "nodeName": "", "labels": map[string]any{},
	"command": []any{}, "value": "", "active": int64(0), "generation": int64(0), "clusterIP": "", "data": map[string]any{}}

// mutate changes one random place of v.
func mutate(rng *rand.Rand, v map[string]any) {
	var maps []map[string]any
	var walk func(any)
	walk = func(x any) {
		switch y := x.(type) {
		case map[string]any:
			maps = append(maps, y)
			for _, e := range y {
				walk(e)
			}
		case []any:
			for _, e := range y {
				walk(e)
			}
		}
	}
	walk(v)
	m := maps[rng.IntN(len(maps))]
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	if len(keys) == 0 || rng.IntN(5) == 0 {
		names := make([]string, 0, len(zeroValues))
		for k := range zeroValues {
			names = append(names, k)
		}
		k := names[rng.IntN(len(names))]
		m[k] = zeroValues[k]
		return
	}
	k := keys[rng.IntN(len(keys))]
	switch x := m[k].(type) {
	case string:
		switch q, err := resource.ParseQuantity(x); {
		case err == nil && rng.IntN(2) == 0:
			m[k] = fmt.Sprintf("%dm", q.MilliValue()) // the same quantity written another way
		case err == nil && rng.IntN(2) == 0:
			m[k] = q.Value() // as a number
		default:
			m[k] = x + "x"
		}
	case int64:
		if rng.IntN(2) == 0 {
			m[k] = float64(x) // the same number
		} else {
			m[k] = x + 1
		}
	case bool:
		m[k] = !x
	case []any:
		if len(x) > 0 && rng.IntN(2) == 0 {
			m[k] = x[:len(x)-1]
		} else {
			m[k] = append(x, "extra")
		}
	case map[string]any:
		m[k] = "not an object"
	case nil:
		m[k] = "not nil"
	default:
		delete(m, k)
		m[k+"Missing"] = x
	}
}
