package testcluster_test

import (
	"context"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// The package's cluster runs Kueue too (TestKueueQueuesJobsByQuota); it leaves alone what
// has no queue-name label outside a namespace with a LocalQueue default, as the other tests'.
func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{Kueue: true})) }

// waitTimeout bounds every wait of these tests.
const waitTimeout = 30 * time.Second

func TestDefaultNodesMatchTestdata(t *testing.T) {
	t.Parallel()
	got, err := testcluster.LoadNodes("testdata/nodes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := testcluster.DefaultNodes(); !reflect.DeepEqual(got, want) {
		t.Errorf("testdata/nodes.yaml = %+v\nDefaultNodes() = %+v", got, want)
	}
}

func TestKubeconfigWorks(t *testing.T) {
	t.Parallel()
	c := testcluster.Current()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != testcluster.ContextName {
		t.Errorf("current context = %q, want %q", cfg.CurrentContext, testcluster.ContextName)
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubernetes.NewForConfigOrDie(rest).Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version through the kubeconfig (verifying TLS with its CA): %v", err)
	}
	t.Logf("server %s", v.GitVersion)
}

func TestDefaultNodesReady(t *testing.T) {
	t.Parallel()
	client := newClient(t)
	nodes, err := client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.Node{}
	for _, n := range nodes.Items {
		byName[n.Name] = n
	}
	for _, spec := range testcluster.DefaultNodes() {
		n, ok := byName[spec.Name]
		if !ok {
			t.Errorf("node %s missing", spec.Name)
			continue
		}
		checkNode(t, n, spec)
	}
}

// checkNode asserts that n is Ready, untainted, and has the resources and labels of spec.
func checkNode(t *testing.T, n corev1.Node, spec testcluster.NodeSpec) {
	t.Helper()
	if !nodeReady(n) {
		t.Errorf("node %s not Ready: %+v", n.Name, n.Status.Conditions)
	}
	if len(n.Spec.Taints) > 0 {
		t.Errorf("node %s tainted: %+v", n.Name, n.Spec.Taints)
	}
	gpus := n.Status.Allocatable[keys.ResourceGPU]
	if gpus.Value() != int64(spec.GPUs) {
		t.Errorf("node %s allocatable %s = %s, want %d", n.Name, keys.ResourceGPU, gpus.String(), spec.GPUs)
	}
	for res, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: spec.CPU, corev1.ResourceMemory: spec.Memory, corev1.ResourcePods: "110"} {
		if got := n.Status.Allocatable[res]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("node %s allocatable %s = %s, want %s", n.Name, res, got.String(), want)
		}
	}
	wantLabels := map[string]string{
		"type": "kwok", corev1.LabelHostname: spec.Name, keys.GPUType: spec.GPUType,
		keys.GPUProduct: spec.GPUProduct, keys.GPUCount: strconv.Itoa(spec.GPUs),
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("node %s label %s = %q, want %q", n.Name, k, n.Labels[k], v)
		}
	}
	if n.Annotations[testcluster.KwokAnnotation] != testcluster.KwokAnnotationValue {
		t.Errorf("node %s lacks annotation %s=%s", n.Name, testcluster.KwokAnnotation, testcluster.KwokAnnotationValue)
	}
}

func TestGPUJobRunsOnH100AndCompletes(t *testing.T) {
	t.Parallel()
	client, ns := newClient(t), newNamespace(t)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train"},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{keys.GPUType: "h100-80g"},
				Containers:    []corev1.Container{gpuContainer(2)},
			}},
		},
	}
	if _, err := client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "job to complete", func(ctx context.Context) (bool, error) {
		j, err := client.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				t.Fatalf("job failed: %s", c.Message)
			}
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("job has %d pods, want 1", len(pods.Items))
	}
	if p := pods.Items[0]; p.Spec.NodeName != "gpu-h100-0" || p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod %s on node %q in phase %s, want gpu-h100-0 and Succeeded", p.Name, p.Spec.NodeName, p.Status.Phase)
	}
}

func TestResourceQuotaRejectsPodOverGPULimit(t *testing.T) {
	t.Parallel()
	client, ns := newClient(t), newNamespace(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpus"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{keys.QuotaRequestsGPU: resource.MustParse("1")}},
	}
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(t.Context(), quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "quota controller to compute the quota's status", func(ctx context.Context) (bool, error) {
		q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, quota.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, ok := q.Status.Hard[keys.QuotaRequestsGPU]
		return ok, nil
	})
	_, err := client.CoreV1().Pods(ns).Create(t.Context(), gpuPod("two", 2), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("creating a pod with 2 GPUs under a 1-GPU quota: err = %v, want Forbidden: exceeded quota", err)
	}
	// Within the quota, a pod is admitted, runs, and (not being a Job's) stays Running.
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), gpuPod("one", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a pod with 1 GPU under a 1-GPU quota: %v", err)
	}
	waitPhase(t, client, ns, "one", corev1.PodRunning)
	time.Sleep(1500 * time.Millisecond)
	waitPhase(t, client, ns, "one", corev1.PodRunning)
}

func TestPodOverNodeCapacityStaysPending(t *testing.T) {
	t.Parallel()
	client, ns := newClient(t), newNamespace(t)
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), gpuPod("nine", 9), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "scheduler to find the pod unschedulable", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "nine", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("pod asking for 9 GPUs was bound to %s", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				t.Logf("unschedulable: %s", c.Message)
				return p.Status.Phase == corev1.PodPending, nil
			}
		}
		return false, nil
	})
}

func TestAddAndDeleteNode(t *testing.T) {
	t.Parallel()
	c, client, ns := testcluster.Current(), newClient(t), newNamespace(t)
	spec := testcluster.NodeSpec{Name: "gpu-l4-extra", GPUs: 2, GPUProduct: "NVIDIA-L4", GPUType: "l4-24g",
		CPU: "16", Memory: "64Gi", Labels: map[string]string{"test": t.Name()}}
	if err := c.AddNode(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNode(context.Background(), spec.Name) })
	n, err := client.CoreV1().Nodes().Get(t.Context(), spec.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNode(t, *n, spec)
	pod := gpuPod("on-l4", 2)
	pod.Spec.NodeSelector = map[string]string{"test": t.Name()}
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, client, ns, pod.Name, corev1.PodRunning)
	if err := c.DeleteNode(t.Context(), spec.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Get(t.Context(), spec.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node after DeleteNode: err = %v, want NotFound", err)
	}
}

// newClient returns a client of the package's cluster.
func newClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	return testcluster.NewClient(t)
}

// newNamespace creates a namespace for one test, deleted after it (testcluster.NewNamespace).
func newNamespace(t *testing.T) string {
	t.Helper()
	return testcluster.NewNamespace(t, newClient(t))
}

// gpuContainer is a container that asks for gpus whole GPUs.
func gpuContainer(gpus int64) corev1.Container {
	return corev1.Container{
		Name:  "main",
		Image: "registry.example/never-pulled:latest",
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
		},
	}
}

// gpuPod is a bare pod that asks for gpus whole GPUs.
func gpuPod(name string, gpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{gpuContainer(gpus)}},
	}
}

// waitPhase waits until the pod is in phase.
func waitPhase(t *testing.T, client kubernetes.Interface, ns, name string, phase corev1.PodPhase) {
	t.Helper()
	poll(t, "pod "+name+" to be "+string(phase), func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == phase, err
	})
}

// poll checks cond every 100ms until it holds, failing the test after waitTimeout.
func poll(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	testcluster.Poll(t, what, waitTimeout, cond)
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
