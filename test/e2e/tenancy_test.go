package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const tenancyConfig = `version: v0.1
namespaces:
  - path: teams/*/**
    namespace: $1
`

const tenancyQuota = `kind: quota
version: v0.1
metadata: {name: e2e-tenancy}
users:
  e2e-tenant: {cpu: 8, memory: 16Gi, gpu: 8}
`

const tenancyWeb = `kind: compute
version: v0.1
job: {name: web}
environment: {image: nginx:1.27}
service: {replicas: 1, port: 80}
resources: {cpu: 1, memory: 1Gi}
`

// tenancyEvil is a team file that tries every way to root on a node at once, and to reach
// beyond its namespace.
const tenancyEvil = `apiVersion: apps/v1
kind: Deployment
metadata: {name: evil}
spec:
  selector: {matchLabels: {app: evil}}
  template:
    metadata: {labels: {app: evil}}
    spec:
      hostPID: true
      nodeName: kwok-h100-0
      tolerations: [{operator: Exists}]
      priorityClassName: system-node-critical
      containers:
        - name: c
          image: busybox
          securityContext: {privileged: true}
          volumeMounts: [{name: root, mountPath: /host}]
      volumes: [{name: root, hostPath: {path: /}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: evil-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: e2e-tenant}]
`

// TestTenantDirectoryCannotReachBeyondItsNamespace: a team's objects are synced into its
// namespace, marked as the tenant's and applied with its identity; a revision that adds a file
// trying privileged pods, host namespaces, hostPath /, nodeName, blanket tolerations, a
// system priority and a ClusterRoleBinding is refused whole with file:line and rule, and
// changes nothing in the cluster — not even the edit that came with it. A team member who
// bypasses Git is held by the admission policy that the sync applied.
func TestTenantDirectoryCannotReachBeyondItsNamespace(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gpuctl.yaml", tenancyConfig)
	write("quotas/quota.yaml", tenancyQuota)
	write("teams/e2e-tenant/web.yaml", tenancyWeb)
	// other tests share the inventory: never prune theirs
	if out, errOut, code := gpuctl(t, "sync", "--local", repo, "--prune=false", "--color", "never"); code != 0 {
		t.Fatalf("first sync: exit %d\n%s\n%s", code, out, errOut)
	}
	kube, err := kubernetes.NewForConfig(testcluster.Current().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := kube.AppsV1().Deployments("e2e-tenant").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Annotations[keys.Tenant] != "e2e-tenant" {
		t.Errorf("the team's Deployment is not marked as the tenant's: %v", dep.Annotations)
	}
	if _, err := kube.RbacV1().RoleBindings("e2e-tenant").Get(ctx, keys.TenantServiceAccount, metav1.GetOptions{}); err != nil {
		t.Errorf("the tenant's identity was not rendered: %v", err)
	}

	teamMemberIsHeldByAdmission(t, kube)

	write("teams/e2e-tenant/web.yaml", strings.Replace(tenancyWeb, "replicas: 1", "replicas: 2", 1))
	write("teams/e2e-tenant/evil.yaml", tenancyEvil)
	out, errOut, code := gpuctl(t, "sync", "--local", repo, "--prune=false", "--color", "never")
	if code != app.ExitTrouble || !strings.Contains(errOut, "is invalid: nothing was planned") {
		t.Fatalf("a hostile revision: exit %d, want %d\n%s\n%s", code, app.ExitTrouble, out, errOut)
	}
	for _, want := range []string{
		"evil.yaml:9:", "hostPID: pod policy host-namespaces",
		"evil.yaml:10:", "nodeName: pod policy node-name",
		"evil.yaml:11:", "pod policy tolerations",
		"evil.yaml:12:", "priorityClassName: pod policy priority-class",
		"privileged: pod policy privileged",
		"pod policy host-path",
		"evil.yaml:21:", "tenancy kinds: ClusterRoleBinding",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, errOut)
		}
	}
	dep, err = kube.AppsV1().Deployments("e2e-tenant").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *dep.Spec.Replicas != 1 {
		t.Errorf("a refused revision changed the team's Deployment: %v", err)
	}
	if _, err := kube.AppsV1().Deployments("e2e-tenant").Get(ctx, "evil", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hostile Deployment exists: %v", err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, "evil-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRoleBinding exists: %v", err)
	}
}

// teamMemberIsHeldByAdmission: the admission policy that the sync applied holds a team member
// who bypasses Git (a user with the ClusterRole edit in the namespace, as kubectl would send):
// a privileged pod is refused with the rule's name, a plain one is created.
func teamMemberIsHeldByAdmission(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	ns, user := "e2e-tenant", "e2e-team-member"
	_, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cfg := testcluster.Current().RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	member, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string, privileged bool) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{ // the namespace has a quota
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
	}
	// the policy takes effect once the API server's policy informer has seen it, and the
	// member's RoleBinding once its authorizer has: until then the answer is no refusal, or
	// RBAC's Forbidden
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err = member.CoreV1().Pods(ns).Create(ctx, pod("root", true), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if (err != nil && strings.Contains(err.Error(), "pod policy")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err == nil || !strings.Contains(err.Error(), "pod policy privileged") {
		t.Fatalf("a team member's privileged pod was not refused by admission naming the rule: %v", err)
	}
	if _, err := member.CoreV1().Pods(ns).Create(ctx, pod("plain", false), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a plain pod of the team member was refused: %v", err)
	}
}
