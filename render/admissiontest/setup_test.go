package admissiontest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// The namespaces of the tests: two tenants and one that no tenant directory maps.
const (
	alice    = "alice"
	bob      = "bob"
	unlisted = "not-a-tenant"
	// developer is a team member with the ClusterRole edit in every test namespace.
	developer = "alice-dev"
	// syncTimeout bounds the wait for the API server's policy informer.
	syncTimeout = time.Minute
)

// env is what every test uses: the admin's clients and a team member's.
type env struct {
	admin  kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	// dev is a plain client of a team member (what `kubectl apply` by that member does).
	dev kubernetes.Interface
	// as returns a client that impersonates user.
	as func(user string) kubernetes.Interface
}

var (
	setupOnce sync.Once
	shared    *env
	setupErr  error
)

// setup creates the namespaces, the team member's RoleBindings and the tenant's
// ServiceAccount, applies the admission policy rendered for alice and bob, and waits until
// the API server enforces it. It runs once per package.
func setup(t *testing.T) *env {
	t.Helper()
	setupOnce.Do(func() { shared, setupErr = newEnv() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

func newEnv() (*env, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*syncTimeout)
	defer cancel()
	cfg := testcluster.Current().RESTConfig()
	as := func(user string) kubernetes.Interface {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: user}
		return kubernetes.NewForConfigOrDie(c)
	}
	e := &env{
		admin:  kubernetes.NewForConfigOrDie(cfg),
		dyn:    dynamic.NewForConfigOrDie(cfg),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg))),
		dev:    as(developer),
		as:     as,
	}
	for _, ns := range []string{alice, bob, unlisted} {
		if err := e.createNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: keys.TenantServiceAccount, Namespace: alice}}
	if _, err := e.admin.CoreV1().ServiceAccounts(alice).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	// gpuctl-high only in bob; the Priority admission plugin needs the class to exist.
	policy := &render.Config{Tenancy: render.Tenancy{HighPriorityNamespaces: []string{bob}}}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: keys.PriorityClassHigh}, Value: keys.PriorityValueHigh}
	if _, err := e.admin.SchedulingV1().PriorityClasses().Create(ctx, high, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if err := e.apply(ctx, render.AdmissionPolicy(policy, []string{bob, alice})); err != nil {
		return nil, err
	}
	return e, e.waitEnforced(ctx)
}

// createNamespace creates a namespace in which the team member may edit.
func (e *env) createNamespace(ctx context.Context, ns string) error {
	_, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: developer, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: developer}},
	}
	if _, err := e.admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// waitEnforced polls, with a dry run, until a privileged pod in alice is refused: policies
// take effect once the API server's policy informer has seen them.
func (e *env) waitEnforced(ctx context.Context) error {
	deadline := time.Now().Add(syncTimeout)
	for {
		_, err := e.dev.CoreV1().Pods(alice).Create(ctx, privilegedPod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "pod policy privileged:") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the admission policy was not enforced after %s; last answer to a privileged pod: %v", syncTimeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// apply server-side applies objects in order, as the admin.
func (e *env) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := e.applyOne(ctx, o); err != nil {
			return fmt.Errorf("%s: apply: %w", object.RefOf(o).String(), err)
		}
	}
	return nil
}

func (e *env) applyOne(ctx context.Context, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	data, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = e.dyn.Resource(m.Resource)
	if o.GetNamespace() != "" {
		ri = e.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	force := true
	_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "gpuctl-admissiontest", Force: &force})
	return err
}

// waitPods waits until at least one pod labelled app=name exists in ns; on timeout the error
// quotes the namespace's FailedCreate events (where a controller says why it made no pod).
func (e *env) waitPods(ctx context.Context, ns, name string) error {
	deadline := time.Now().Add(syncTimeout)
	for {
		pods, err := e.admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: keys.App + "=" + name})
		if err == nil && len(pods.Items) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no pod of %s/%s after %s (list error %v); FailedCreate events: %s", ns, name, syncTimeout, err, e.failedCreates(ctx, ns))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (e *env) failedCreates(ctx context.Context, ns string) string {
	evs, err := e.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, ev := range evs.Items {
		if ev.Reason == "FailedCreate" {
			out = append(out, ev.InvolvedObject.Kind+" "+ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	return strings.Join(out, "\n")
}

func privilegedPod(name string) *corev1.Pod {
	p := pod(name)
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	return p
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: podSpec()}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}
}

func ptr[T any](v T) *T { return &v }
