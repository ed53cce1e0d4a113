package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// secretRefFiles is a tree with a tenant directory for namespace ns (no admission policy: it
// is cluster-wide, and other tests apply theirs): a training job that takes HF_TOKEN from
// Secret hf-token (line 7 of its file), an inference service that mounts Secret tls (line
// 8), a compute job that reads Secret declared, which a file of the tenant declares, and a
// ConfigMap; and, in the admin's namespace adminNS, a compute job that reads Secret
// admin-creds (line 6).
func secretRefFiles(ns, adminNS string) map[string]string {
	return map[string]string{
		".gpuctl.yaml":    "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\ntenancy: {admission: false}\n",
		"namespaces.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: " + adminNS + "}\n",
		"admin/worker.yaml": "kind: compute\nversion: v0.1\njob: {name: admin-worker, namespace: " + adminNS + "}\nenvironment:\n  image: busybox\n" +
			"  envFrom: [{secret: admin-creds}]\n",
		"teams/" + ns + "/train.yaml": "kind: training\nversion: v0.1\njob: {name: sft}\nenvironment:\n  image: pytorch:1\n  env:\n" +
			"    - {name: HF_TOKEN, secret: {name: hf-token, key: token}}\n",
		"teams/" + ns + "/serve.yaml": "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: vllm}\nservice: {port: 8000}\n" +
			"storage:\n  secrets:\n    - {name: tls, path: /etc/tls}\n",
		"teams/" + ns + "/worker.yaml":   "kind: compute\nversion: v0.1\njob: {name: worker}\nenvironment:\n  image: busybox\n  envFrom: [{secret: declared}]\n",
		"teams/" + ns + "/declared.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: declared}\nstringData: {k: not-a-secret}\n",
		"teams/" + ns + "/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n",
	}
}

// createSecret creates a Secret outside gpuctl.
func createSecret(e *env, ns, name string) {
	e.t.Helper()
	_, err := e.kube.CoreV1().Secrets(ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
		StringData: map[string]string{"token": "not-a-secret"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
}

// TestMissingSecretFailsItsWorkload: a workload that references a Secret that no file
// declares and the cluster does not hold fails its change at plan time, with an error naming
// its file and line, the field and the Secret, and the other objects of its document (a
// Service) fail with it; nothing of it is applied, everything else is (a Secret a file
// declares counts). Once the Secrets exist, the workloads are applied without the
// annotation g8s.host/secret-refs, and the next sync is a no-op.
func TestMissingSecretFailsItsWorkload(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns, adminNS := "secret-refs", "secret-refs-admin"
	files := secretRefFiles(ns, adminNS)
	missing := map[string]string{
		"Job " + ns + "/sft": "teams/" + ns + `/train.yaml:7: environment.env[0].secret.name: Secret "hf-token" does not exist in namespace ` + ns +
			": no file declares it and the cluster does not hold it",
		"Deployment " + ns + "/chat":              "teams/" + ns + `/serve.yaml:8: storage.secrets[0].name: Secret "tls" does not exist in namespace ` + ns,
		"Service " + ns + "/svc-chat":             "not applied: Deployment " + ns + "/chat of the same document references a Secret that does not exist",
		"Deployment " + adminNS + "/admin-worker": `admin/worker.yaml:6: environment.envFrom[0].secret: Secret "admin-creds" does not exist in namespace ` + adminNS,
	}
	// The first sync creates the namespaces and the tenant's identity: a Secret of a namespace
	// that does not exist yet does not exist either (the tenant may not read it yet).
	for sync := 1; sync <= 2; sync++ {
		plan := e.plan(renderFiles(t, files))
		checkFailures(t, plan, missing)
		if len(plan.Warnings) > 0 {
			t.Errorf("sync %d: warnings %q", sync, plan.Warnings)
		}
		if _, err := e.apply(plan); err == nil {
			t.Fatalf("sync %d: an apply with failed changes returned no error", sync)
		}
		if _, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "sft", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("sync %d: the Job of a missing Secret was applied: %v", sync, err)
		}
		if _, err := e.kube.CoreV1().Services(ns).Get(e.ctx, "svc-chat", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("sync %d: the Service of a workload with a missing Secret was applied: %v", sync, err)
		}
		if _, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, "worker", metav1.GetOptions{}); err != nil {
			t.Fatalf("sync %d: the workload of a declared Secret was not applied: %v", sync, err)
		}
		if _, err := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, "settings", metav1.GetOptions{}); err != nil {
			t.Fatalf("sync %d: the ConfigMap was not applied: %v", sync, err)
		}
	}

	for ns, name := range map[string]string{ns: "hf-token", adminNS: "admin-creds"} {
		createSecret(e, ns, name)
	}
	createSecret(e, ns, "tls")
	plan, _ := e.sync(renderFiles(t, files))
	for _, want := range []string{"create Job " + ns + "/sft", "create Deployment " + ns + "/chat", "create Service " + ns + "/svc-chat",
		"create Deployment " + adminNS + "/admin-worker"} {
		if !strings.Contains(actions(plan), want) {
			t.Errorf("once the Secrets exist, the plan lacks %q:\n%s", want, actions(plan))
		}
	}
	job, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "sft", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := job.Annotations[keys.SecretRefs]; ok {
		t.Errorf("the Job was applied with the annotation %s", keys.SecretRefs)
	}
	if env := job.Spec.Template.Spec.Containers[0].Env; len(env) == 0 || env[len(env)-1].ValueFrom == nil ||
		env[len(env)-1].ValueFrom.SecretKeyRef == nil || env[len(env)-1].ValueFrom.SecretKeyRef.Name != "hf-token" {
		t.Errorf("HF_TOKEN is not read from Secret hf-token: %+v", env)
	}
	if plan := e.plan(renderFiles(t, files)); plan.HasChanges() || len(plan.Failed()) > 0 {
		t.Fatalf("the next sync is not a no-op:\n%s\n%s", actions(plan), failures(plan))
	}
	// The daemon's plans, of deferred renders: the references are read off the heads (the
	// second from the render cache), and the workloads are up to date.
	cache := render.NewCache(0)
	for i := range 2 {
		res := deferredRender(t, cache, files)
		plan, err := e.manager.PlanDeferred(e.ctx, res.Objects, res.Bodies)
		if err != nil {
			t.Fatal(err)
		}
		if plan.HasChanges() || len(plan.Failed()) > 0 || len(plan.Warnings) > 0 {
			t.Fatalf("deferred plan %d is not a no-op:\n%s\n%s\n%q", i, actions(plan), failures(plan), plan.Warnings)
		}
	}
}

// TestSecretCheckAsDeployedReconciler: with exactly the RBAC of deploy/, a tenant's Secret
// references are checked as the tenant, who may read its Secrets' metadata: a missing one
// fails its job, an existing one lets it be applied. The reconciler's own identity reads no
// Secret: an admin namespace's reference is not checked, the plan says so, and the workload
// is applied.
func TestSecretCheckAsDeployedReconciler(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	asDeployedReconciler(e)
	ns, adminNS := "secret-check", "secret-check-admin"
	files := secretRefFiles(ns, adminNS)
	for _, f := range []string{"serve.yaml", "worker.yaml", "declared.yaml"} {
		delete(files, "teams/"+ns+"/"+f)
	}
	// The admin's namespace exists (not gpuctl's): its Secret could be there, unread.
	files["namespaces.yaml"] = "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"
	createNamespace(e, adminNS)
	job := func() error {
		_, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "sft", metav1.GetOptions{})
		return err
	}
	plan := e.plan(renderFiles(t, files))
	checkFailures(t, plan, map[string]string{"Job " + ns + "/sft": "teams/" + ns + `/train.yaml:7: environment.env[0].secret.name: Secret "hf-token" does not exist`})
	wantWarning := `admin/worker.yaml:6: environment.envFrom[0].secret: cannot check that Secret "admin-creds" exists in namespace ` + adminNS +
		" (Deployment " + adminNS + "/admin-worker): secrets \"admin-creds\" is forbidden"
	if len(plan.Warnings) != 1 || !strings.HasPrefix(plan.Warnings[0], wantWarning) {
		t.Errorf("warnings %q, want one starting %q", plan.Warnings, wantWarning)
	}
	if _, err := e.apply(plan); err == nil {
		t.Fatal("an apply with a failed change returned no error")
	}
	if _, err := e.kube.AppsV1().Deployments(adminNS).Get(e.ctx, "admin-worker", metav1.GetOptions{}); err != nil {
		t.Fatalf("the admin's workload whose Secret could not be checked was not applied: %v", err)
	}
	if err := job(); !apierrors.IsNotFound(err) {
		t.Fatalf("the tenant's Job of a missing Secret was applied: %v", err)
	}

	createSecret(e, ns, "hf-token")
	plan, _ = e.sync(renderFiles(t, files))
	if c := find(plan, "Job", "sft"); c.Action != reconciler.ActionCreate || c.Error != "" {
		t.Fatalf("once its Secret exists, the tenant's Job is %s %q, want create", c.Action, c.Error)
	}
	if err := job(); err != nil {
		t.Fatalf("the tenant's Job was not applied: %v", err)
	}
}
