package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// syncExamples copies examples/ and syncs the copy with the admin's credentials (other tests
// share the inventory: their objects may go). The examples' workloads are deleted when the
// test ends: their services and notebooks hold GPUs, and their pods of higher priority would
// preempt the pods of later tests.
func syncExamples(t *testing.T) string {
	t.Helper()
	t.Cleanup(func() { deleteWorkloads(t, kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())) })
	repo := copyTree(t, "../../examples")
	if out, errOut, code := gpuctl(t, "sync", "--local", repo, "--max-prune=100%", "--color", "never"); code != 0 {
		t.Fatalf("sync of examples: exit %d\n%s\n%s", code, tail(out), errOut)
	}
	return repo
}

// TestDiffOfATeamDirectory: `gpuctl diff <repo>/teams/alice` plans what the
// directory declares and nothing of the rest of the repository — no delete of bob's objects,
// the Namespaces or quotas, no node label — and says it is scoped; `sync --local` of the
// directory after a file is removed prunes exactly that file's objects.
func TestDiffOfATeamDirectory(t *testing.T) {
	repo := syncExamples(t)
	alice := filepath.Join(repo, "teams", "alice")
	out, errOut, code := gpuctl(t, "diff", alice, "--color", "never")
	if code != 0 || strings.Contains(out, "delete") || strings.Contains(out, "Node ") ||
		!strings.Contains(out, "note: scoped to teams/alice/: objects declared elsewhere are not pruned") {
		t.Fatalf("diff of teams/alice after a sync of the repository: exit %d\n%s\n%s", code, out, errOut)
	}

	if err := os.Remove(filepath.Join(alice, "alice-mlflow.yaml")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = gpuctl(t, "sync", "--local", alice, "--color", "never")
	if code != 0 {
		t.Fatalf("sync of teams/alice: exit %d\n%s\n%s", code, out, errOut)
	}
	var deletes []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[0] == "delete" {
			deletes = append(deletes, f[1]+" "+f[2]+"/"+f[3])
		}
	}
	if got, want := strings.Join(deletes, ", "), "Service alice/svc-alice-mlflow, Deployment alice/alice-mlflow"; got != want &&
		got != "Deployment alice/alice-mlflow, Service alice/svc-alice-mlflow" {
		t.Fatalf("scoped sync pruned %q, want %s\n%s", got, want, out)
	}
	if out, _, code = gpuctl(t, "diff", repo, "--color", "never"); code != 0 {
		t.Fatalf("the repository after the scoped sync: exit %d\n%s", code, out)
	}
}

// teamKubeconfig creates the ServiceAccount dev in namespace ns, bound to the ClusterRole edit
// there only, and writes a kubeconfig with a token of it (TokenRequest).
func teamKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	c := testcluster.Current()
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dev-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "dev", Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "dev",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin := c.RESTConfig()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	cfg.AuthInfos["dev"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["dev"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "dev", Namespace: ns}
	cfg.CurrentContext = "dev"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDiffWithTeamCredentials: a team member whose credentials may only edit
// namespace alice diffs teams/alice: exit 1, the team's edit shown, and notes on what could not
// be checked (the inventory and so prunes); the admin's diff shows the same edit plus the
// prune. The whole repository with those credentials notes the nodes; `sync --local` applies
// the edit and prunes nothing.
func TestDiffWithTeamCredentials(t *testing.T) {
	repo := syncExamples(t)
	dev := teamKubeconfig(t, "alice")
	alice := filepath.Join(repo, "teams", "alice")
	edit := filepath.Join(alice, "bge-m3-embedding.yaml")
	data, _ := os.ReadFile(edit)
	if err := os.WriteFile(edit, []byte(strings.Replace(string(data), "replicas: 1", "replicas: 2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(alice, "qwen25-7b-medical-lora.yaml")); err != nil {
		t.Fatal(err)
	}
	const update, prune = "~ update Deployment alice/bge-m3-embedding", "- delete Job alice/qwen25-7b-medical-lora"
	const noInventory = "note: the inventory " + keys.SystemNamespace + "/" + keys.InventoryName + " is not readable with these credentials: prunes are not shown"

	out, errOut, code := gpuctlAs(t, dev, "diff", alice, "--color", "never")
	if code != app.ExitFailed || !strings.Contains(out, update) || strings.Contains(out, prune) || !strings.Contains(out, noInventory) ||
		!strings.Contains(out, "RoleBinding alice/gpuctl-tenant (.gpuctl.yaml): not checked: these credentials may not") {
		t.Fatalf("diff with team credentials: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = gpuctl(t, "diff", alice, "--color", "never")
	if code != app.ExitFailed || !strings.Contains(out, update) || !strings.Contains(out, prune) || strings.Contains(out, "not readable") {
		t.Fatalf("diff with admin credentials: exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = gpuctlAs(t, dev, "diff", repo, "--color", "never")
	if code != app.ExitFailed || !strings.Contains(out, update) ||
		!strings.Contains(out, "note: nodes are not readable with these credentials: pool labels are not checked") ||
		!strings.Contains(out, "; GPUs: +1 in inference-pool\n") { // objects not read count no GPUs
		t.Fatalf("diff of the repository with team credentials: exit %d\n%s\n%s", code, tail(out), errOut)
	}

	out, errOut, code = gpuctlAs(t, dev, "sync", "--local", alice, "--color", "never")
	if code != 0 || !strings.Contains(errOut, "nothing is pruned") || strings.Contains(out, "delete") {
		t.Fatalf("sync with team credentials: exit %d\n%s\n%s", code, out, errOut)
	}
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	dep, err := kube.AppsV1().Deployments("alice").Get(context.Background(), "bge-m3-embedding", metav1.GetOptions{})
	if err != nil || *dep.Spec.Replicas != 2 {
		t.Errorf("the team's edit was not applied: %v", err)
	}
	if _, err := kube.BatchV1().Jobs("alice").Get(context.Background(), "qwen25-7b-medical-lora", metav1.GetOptions{}); err != nil {
		t.Errorf("a sync without the inventory pruned: %v", err)
	}
}
