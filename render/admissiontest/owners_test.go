package admissiontest

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// The ways around Kueue's queue that a team member's client can take (issue "Tenancy, round
// two", finding 1): an owner that Kueue takes for one of its integrations beside one the
// garbage collector cannot resolve, an owner removed or a pod relabeled so that its controller
// lets it go, a scheduling gate removed by hand, a Job handed to another manager. Controllers
// (kube-controller-manager, Kueue) still do all of it.

// forgedOwners are the owners of the review's reproduction: a controller reference to a
// Deployment of the team (any UID) and one to a kind the API server does not serve.
func forgedOwners() []metav1.OwnerReference {
	return []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "00000000-0000-0000-0000-000000000001", Controller: ptr(true)},
		{APIVersion: "example.com/v1", Kind: "Nowhere", Name: "x", UID: "00000000-0000-0000-0000-000000000002"},
	}
}

// ownedPod is a pod of 8 GPUs with the forged owners.
func ownedPod(name string) *corev1.Pod {
	p := pod(name)
	p.OwnerReferences = forgedOwners()
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceName(keys.ResourceGPU): resource.MustParse("8")}
	return p
}

// TestForgedOwnersRefused: a team member creates no Pod, ReplicaSet or Job with owners; a
// ServiceAccount of kube-controller-manager's controllers creates the same Pod.
func TestForgedOwnersRefused(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "m"}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "m"}}, Spec: podSpec()}
	jobTemplate := *template.DeepCopy()
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	for name, create := range map[string]func(context.Context, kubernetes.Interface) error{
		"a Pod of 8 GPUs": createPod(ownedPod("miner")),
		"a ReplicaSet": func(ctx context.Context, c kubernetes.Interface) error {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "miners", OwnerReferences: forgedOwners()},
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(4)), Selector: selector, Template: template}}
			_, err := c.AppsV1().ReplicaSets(alice).Create(ctx, rs, metav1.CreateOptions{})
			return err
		},
		"a Job": func(ctx context.Context, c kubernetes.Interface) error {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "child", OwnerReferences: forgedOwners()}, Spec: batchv1.JobSpec{Template: jobTemplate}}
			_, err := c.BatchV1().Jobs(alice).Create(ctx, j, metav1.CreateOptions{})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := create(ctx, e.dev)
			if err == nil || !strings.Contains(err.Error(), "pod policy owner-references: ownerReferences Deployment web, Nowhere x may only be set or changed by a controller") ||
				!strings.Contains(err.Error(), "not by "+developer) {
				t.Errorf("created by %s: %v, want refused by owner-references", developer, err)
			}
		})
	}
	rsController := e.as("system:serviceaccount:kube-system:replicaset-controller")
	if _, err := rsController.CoreV1().Pods(alice).Create(ctx, ownedPod("by-controller"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the ReplicaSet controller's pod with owners: %v", err)
	}
}

// TestControllersKeepTheirPods: the Deployment controller and the ReplicaSet controller (here
// kube-controller-manager with the admin's credentials) create a Deployment's ReplicaSet and
// pods, with owners. A team member may not take a pod from its owner, neither by removing the
// owner nor by relabeling the pod (its ReplicaSet would let it go and start another), while
// the labels of a pod without owner stay the member's.
func TestControllersKeepTheirPods(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	labels := map[string]string{keys.App: "owned"}
	tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec()}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "owned"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tpl}}
	if _, err := e.dev.AppsV1().Deployments(alice).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a Deployment without owners: %v", err)
	}
	if err := e.waitPods(ctx, alice, "owned"); err != nil {
		t.Fatal(err)
	}
	pods, err := e.admin.CoreV1().Pods(alice).List(ctx, metav1.ListOptions{LabelSelector: keys.App + "=owned"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the Deployment's pods: %v", err)
	}
	owned := pods.Items[0].Name
	if refs := pods.Items[0].OwnerReferences; len(refs) != 1 || refs[0].Kind != "ReplicaSet" {
		t.Fatalf("pod %s has owners %v, want its ReplicaSet", owned, refs)
	}
	update := func(c kubernetes.Interface, name string, edit func(*corev1.Pod)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := c.CoreV1().Pods(alice).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			edit(p)
			_, err = c.CoreV1().Pods(alice).Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
	}
	err = update(e.dev, owned, func(p *corev1.Pod) { p.OwnerReferences = nil })
	if err == nil || !strings.Contains(err.Error(), "pod policy owner-references: ownerReferences (removed) may only be set or changed by a controller") {
		t.Errorf("a team member removed the owner of pod %s: %v, want refused by owner-references", owned, err)
	}
	err = update(e.dev, owned, func(p *corev1.Pod) { p.Labels = map[string]string{keys.App: "quarantined"} })
	if err == nil || !strings.Contains(err.Error(), "pod policy owner-references: the labels of a pod of ReplicaSet ") {
		t.Errorf("a team member relabeled pod %s: %v, want refused by owner-references", owned, err)
	}
	// A JSON merge patch of the owners, as `kubectl patch` sends it, is an UPDATE too.
	patch := []byte(`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"00000000-0000-0000-0000-000000000001","controller":true}]}}`)
	_, err = e.dev.CoreV1().Pods(alice).Patch(ctx, owned, types.MergePatchType, patch, metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "pod policy owner-references: ownerReferences Deployment web may only be set or changed by a controller") {
		t.Errorf("a team member patched the owner of pod %s: %v, want refused by owner-references", owned, err)
	}
	if _, err := e.dev.CoreV1().Pods(alice).Create(ctx, pod("free"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := update(e.dev, "free", func(p *corev1.Pod) { p.Labels = map[string]string{"touched": "yes"} }); err != nil {
		t.Errorf("a team member relabeled a pod without owner: %v", err)
	}
}

// TestSchedulingGatesStay: a team member removes no scheduling gate of a pod; a controller
// (here a member of system:masters, as Kueue runs in the local cluster) does.
func TestSchedulingGatesStay(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gated := pod("gated")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: keys.KueuePrefix + "admission"}}
	if _, err := e.dev.CoreV1().Pods(alice).Create(ctx, gated, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ungate := func(c kubernetes.Interface) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := c.CoreV1().Pods(alice).Get(ctx, "gated", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.SchedulingGates = nil
			_, err = c.CoreV1().Pods(alice).Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
	}
	err := ungate(e.dev)
	if err == nil || !strings.Contains(err.Error(), "pod policy scheduling-gates: gate kueue.x-k8s.io/admission may only be removed by Kueue or the controller that set it, not by "+developer) {
		t.Errorf("a team member removed Kueue's gate: %v, want refused by scheduling-gates", err)
	}
	if err := ungate(e.admin); err != nil {
		t.Errorf("a controller removed the gate: %v", err)
	}
}

// TestJobManagers: a team member's Job is run by Kubernetes' Job controller; another manager
// would take it out of the queue.
func TestJobManagers(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := func(name, manager string) *batchv1.Job {
		tpl := corev1.PodTemplateSpec{Spec: podSpec()}
		tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{ManagedBy: ptr(manager), Template: tpl}}
	}
	_, err := e.dev.BatchV1().Jobs(alice).Create(ctx, job("elsewhere", "example.com/runner"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "pod policy managed-by: spec.managedBy example.com/runner must be unset or kubernetes.io/job-controller") {
		t.Errorf("a Job managed by example.com/runner: %v, want refused by managed-by", err)
	}
	if _, err := e.dev.BatchV1().Jobs(alice).Create(ctx, job("default-manager", "kubernetes.io/job-controller"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a Job managed by the Job controller: %v", err)
	}
}
