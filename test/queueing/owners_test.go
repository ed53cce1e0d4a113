package queueing

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// miner is the review's reproduction (issue "Tenancy, round two", finding 1): a Pod of 8 GPUs
// whose controller owner is a Deployment of the team (any UID), which makes Kueue's pod
// webhook skip it, beside an owner of a kind the API server does not serve, which keeps the
// garbage collector from deleting it.
const miner = `apiVersion: v1
kind: Pod
metadata:
  name: miner
  ownerReferences:
    - {apiVersion: apps/v1, kind: Deployment, name: web, uid: 00000000-0000-0000-0000-000000000001, controller: true}
    - {apiVersion: example.com/v1, kind: Nowhere, name: x, uid: 00000000-0000-0000-0000-000000000002}
spec:
  restartPolicy: Never
  nodeSelector: {g8s.host/pool: training-pool}
  containers:
    - name: main
      image: registry.example.com/train:v1
      resources: {limits: {nvidia.com/gpu: 8}}
`

// web is the team's Deployment that the miner names as its owner, with no replica.
const web = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: registry.example.com/vllm:v1}]
`

// TestForgedOwnerCannotSkipItsQueue: in a team whose queue has no GPU, the miner is refused
// by render with its file, line and rule (nothing of it runs), and the same Pod created by a
// team member's client is denied by the admission policy, while a Pod of the same member
// without owners is admitted by the policy and gated by Kueue, and so are the pods of a
// ReplicaSet (a kind Kueue does not integrate) that kube-controller-manager creates.
func TestForgedOwnerCannotSkipItsQueue(t *testing.T) {
	client, _ := clients(t)
	r := newRepo(t)
	const ns = "ord" // quota 0, no borrowing
	r.write("teams/ord/miner.yaml", miner)
	r.write("teams/ord/web.yaml", web)
	out, errOut, code := gpuctl(t, "sync", "--local", r.dir, "--max-prune=100%", "--color", "never")
	if want := "miner.yaml:6:5: metadata.ownerReferences: pod policy owner-references:"; code == 0 || !strings.Contains(out+errOut, want) {
		t.Errorf("sync of the miner: exit %d, want an error %q\n%s%s", code, want, out, errOut)
	}
	if _, err := client.CoreV1().Pods(ns).Get(t.Context(), "miner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the miner was created: %v", err)
	}

	// The team's namespace, its Deployment web (Kueue's pod webhook refuses a pod whose
	// Deployment does not exist) and the admission policy, from a tree without the miner.
	r.remove("teams/ord/miner.yaml")
	r.write("teams/ord/web.yaml", web)
	r.sync()
	dev := member(t, client, ns, "ord-dev")
	var pod corev1.Pod
	if err := yaml.Unmarshal([]byte(miner), &pod); err != nil {
		t.Fatal(err)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	poll(t, "the admission policy to refuse the miner", func(ctx context.Context) (bool, error) {
		_, err := dev.CoreV1().Pods(ns).Create(ctx, &pod, dryRun)
		if err != nil && strings.Contains(err.Error(), "pod policy owner-references: ownerReferences Deployment web, Nowhere x may only be set or changed by a controller") {
			return true, nil
		}
		if err == nil {
			t.Logf("the miner was allowed (dry run); the policy may not be enforced yet")
		}
		return false, err
	})
	pod.OwnerReferences = nil
	// Kueue defaults the queue of a pod from the namespace's LocalQueue once its cache has it
	// (the sync has just created it): until then the same Pod would not be queued.
	poll(t, "Kueue to queue the same Pod without owners", func(ctx context.Context) (bool, error) {
		created, err := dev.CoreV1().Pods(ns).Create(ctx, &pod, dryRun)
		if err != nil {
			return false, err // the policy allows it: an error here is not the policy's
		}
		return len(created.Spec.SchedulingGates) > 0 && created.Labels[keys.KueueQueueName] == keys.KueueLocalQueue, nil
	})
	// A ReplicaSet, a kind Kueue does not integrate, is queued through its pods: the controller
	// creates them with their owner, and Kueue's pod webhook gates them.
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "miners"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: "miners"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{keys.App: "miners"}}, Spec: pod.Spec}}}
	rs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, err := dev.AppsV1().ReplicaSets(ns).Create(t.Context(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a ReplicaSet without owners: %v", err)
	}
	t.Cleanup(func() { // when the test fails too: the namespace's next tests expect no pod there
		ctx, zero := context.Background(), int64(0)
		_ = client.AppsV1().ReplicaSets(ns).Delete(ctx, "miners", metav1.DeleteOptions{})
		_ = client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
			metav1.ListOptions{LabelSelector: keys.App + "=miners"})
	})
	poll(t, "the ReplicaSet's 2 pods", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: keys.App + "=miners"})
		if err != nil || len(pods.Items) < 2 {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" || len(p.Spec.SchedulingGates) == 0 {
				t.Fatalf("pod %s of a ReplicaSet of a team without quota is on node %q with gates %v", p.Name, p.Spec.NodeName, p.Spec.SchedulingGates)
			}
		}
		return true, nil
	})
	foreground := metav1.DeletePropagationForeground
	if err := client.AppsV1().ReplicaSets(ns).Delete(t.Context(), "miners", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	r.emptyTeam(ns)
}

func ptr[T any](v T) *T { return &v }

// member returns a client of a team member with the ClusterRole edit in ns (a kubectl user).
func member(t *testing.T, admin kubernetes.Interface, ns, user string) kubernetes.Interface {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().RoleBindings(ns).Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	cfg := rest.CopyConfig(testcluster.Current().RESTConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(cfg)
}
