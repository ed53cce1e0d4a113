package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/test/testcluster"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// TestDeployedRBACSuffices: the engine running as the ServiceAccount gpuctl-reconciler, with
// exactly the roles of deploy/base, applies a tenant namespace (Namespace, quota, admission
// policy, tenant identity — bind and impersonate) and the tenant's objects as the tenant. A
// tenant Secret, which the reconciler may not read, is read as the tenant: it fails alone on the
// first sync (the tenant's identity does not exist yet) and is applied by the next.
func TestDeployedRBACSuffices(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	asDeployedReconciler(e)

	ns := "rbac-team"
	objs := func() []*unstructured.Unstructured {
		return append(tenantNamespace(ns),
			object("v1", "ResourceQuota", ns, "q", map[string]any{"spec": map[string]any{"hard": map[string]any{"requests.nvidia.com/gpu": "4"}}}),
			object("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "rbac-test-policy", map[string]any{"spec": map[string]any{
				"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"},
					"operations": []any{"CREATE"}, "resources": []any{"pods"}}}},
				"validations": []any{map[string]any{"expression": "true"}}}}),
			object("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "", "rbac-test-policy", map[string]any{"spec": map[string]any{
				"policyName": "rbac-test-policy", "validationActions": []any{"Deny"},
				"matchResources": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"rbac-test": "never"}}}}}),
			asTenant(configMap(ns, "settings", map[string]any{"k": "v"}), ns),
			asTenant(object("batch/v1", "CronJob", ns, "nightly", map[string]any{"spec": map[string]any{"schedule": "0 3 * * *",
				"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}}}}), ns),
			asTenant(object("v1", "Secret", ns, "token", map[string]any{"stringData": map[string]any{"k": "v"}}), ns))
	}
	plan := e.plan(objs())
	checkFailures(t, plan, map[string]string{"Secret rbac-team/token": `get: secrets "token" is forbidden`})
	if strings.Contains(failures(plan), "stringData") {
		t.Errorf("an error quotes the Secret: %s", failures(plan))
	}
	cs, err := e.apply(plan)
	if err == nil || len(cs.Failed()) != 1 {
		t.Fatalf("apply as gpuctl-reconciler: %d failed: %v", len(cs.Failed()), err)
	}
	if _, err := e.kube.BatchV1().CronJobs(ns).Get(e.ctx, "nightly", metav1.GetOptions{}); err != nil {
		t.Fatalf("tenant CronJob not applied: %v", err)
	}
	if _, err := e.kube.CoreV1().Secrets(ns).Get(e.ctx, "token", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Secret was written without being planned: %v", err)
	}
	// Now that the tenant's identity exists, its Secret is read — and written — as the tenant.
	plan = e.plan(objs())
	if c := find(plan, "Secret", "token"); c.Action != reconciler.ActionCreate || c.Error != "" {
		t.Fatalf("second sync: the tenant's Secret is %s %q, want create", c.Action, c.Error)
	}
	if cs, err := e.apply(plan); err != nil || len(cs.Failed()) != 0 {
		t.Fatalf("second sync as gpuctl-reconciler: %v", err)
	}
	if _, err := e.kube.CoreV1().Secrets(ns).Get(e.ctx, "token", metav1.GetOptions{}); err != nil {
		t.Fatalf("the tenant's Secret was not written: %v", err)
	}
	plan = e.plan(objs())
	if plan.HasChanges() || len(plan.Failed()) > 0 {
		t.Fatalf("third sync as gpuctl-reconciler is not a no-op:\n%s", actions(plan))
	}
}

// asDeployedReconciler makes e's manager the ServiceAccount gpuctl-reconciler with exactly
// the roles of deploy/base (its ClusterRole and the tenant ClusterRole).
func asDeployedReconciler(e *env) {
	e.t.Helper()
	createNamespace(e, keys.SystemNamespace)
	for _, f := range []string{"deploy/base/rbac.yaml", testcluster.TenantRoleFile} {
		if err := testcluster.Current().ApplyFile(e.ctx, f); err != nil {
			e.t.Fatal(err)
		}
	}
	tok, err := e.kube.CoreV1().ServiceAccounts(keys.SystemNamespace).CreateToken(e.ctx, "gpuctl-reconciler",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	admin := testcluster.Current().RESTConfig()
	cfg := &rest.Config{Host: admin.Host, BearerToken: tok.Status.Token, TLSClientConfig: admin.TLSClientConfig}
	m, err := reconciler.NewManager(cfg, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.manager = m
}

// TestDeployedRBACCoversKueue: the ClusterRole of deploy/base lets gpuctl-reconciler apply and
// prune what queueing kueue renders (ResourceFlavors, ClusterQueues, LocalQueues,
// WorkloadPriorityClasses; on a MultiKueue manager AdmissionChecks, MultiKueueConfigs and
// MultiKueueClusters) and read Kueue's Workloads, and patch them (a paused job's
// spec.active) but not create, update or delete them. The API server's
// authorizer answers without Kueue's CRDs; applying the objects themselves needs them.
func TestDeployedRBACCoversKueue(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	createNamespace(e, keys.SystemNamespace)
	if err := testcluster.Current().ApplyFile(e.ctx, "deploy/base/rbac.yaml"); err != nil {
		t.Fatal(err)
	}
	allowed := func(resource, verb string) bool {
		t.Helper()
		sar, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(e.ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + keys.SystemNamespace + ":gpuctl-reconciler",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + keys.SystemNamespace, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: resource,
				Verb: verb, Namespace: "alice"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	for _, r := range []string{"resourceflavors", "clusterqueues", "localqueues", "workloadpriorityclasses",
		"admissionchecks", "multikueueconfigs", "multikueueclusters"} { // the last three: MultiKueue on a manager
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
			if !allowed(r, verb) {
				t.Errorf("gpuctl-reconciler may not %s %s.%s", verb, r, keys.KueueGroup)
			}
		}
	}
	// Workloads are Kueue's: read, and patched only to (de)activate a paused job's (kueuepause).
	for verb, want := range map[string]bool{"get": true, "list": true, "watch": true, "create": false, "update": false, "patch": true, "delete": false} {
		if allowed("workloads", verb) != want {
			t.Errorf("gpuctl-reconciler %s workloads.%s: allowed %v, want %v", verb, keys.KueueGroup, !want, want)
		}
	}
}
