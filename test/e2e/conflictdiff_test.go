package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/testcluster"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestDiffOfConflictShowsOnlyOwnedFields: `gpuctl diff` of a Deployment
// whose replicas another manager changed prints the conflict and a diff of the fields gpuctl
// sets (the API server's forced dry-run), not server defaults as removals.
func TestDiffOfConflictShowsOnlyOwnedFields(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	file := "kind: compute\nversion: v0.1\njob: {name: e2e-conflict, namespace: default}\nenvironment: {image: nginx}\nservice: {replicas: 1}\n"
	if err := os.WriteFile(filepath.Join(repo, "web.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	// other tests share the inventory: never prune theirs
	if out, errOut, code := gpuctl(t, "sync", "--local", repo, "--prune=false", "--color", "never"); code != 0 {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	t.Cleanup(func() { _ = kube.AppsV1().Deployments("default").Delete(ctx, "e2e-conflict", metav1.DeleteOptions{}) })
	// The Deployment controller annotates a new Deployment with its revision: let it, so that
	// the diff below compares objects that no other writer is still changing.
	waitUntil(t, "the Deployment's revision annotation", func(ctx context.Context) bool {
		d, err := kube.AppsV1().Deployments("default").Get(ctx, "e2e-conflict", metav1.GetOptions{})
		return err == nil && d.Annotations["deployment.kubernetes.io/revision"] != ""
	})
	sc := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "e2e-conflict", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
	if _, err := kube.AppsV1().Deployments("default").UpdateScale(ctx, "e2e-conflict", sc, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := gpuctl(t, "diff", repo, "--prune=false", "--color", "never")
	if code != app.ExitFailed || !strings.Contains(out, `conflict: .spec.replicas is owned by "kubectl"`) {
		t.Fatalf("diff: exit %d\n%s\n%s", code, out, errOut)
	}
	var changed []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimPrefix(line, "  ")
		if (strings.HasPrefix(line, "-") || strings.HasPrefix(line, "+")) && !strings.HasPrefix(line, "---") && !strings.HasPrefix(line, "+++") {
			changed = append(changed, strings.TrimSpace(line))
		}
	}
	if got := strings.Join(changed, "\n"); got != "-  replicas: 3\n+  replicas: 1" {
		t.Fatalf("changed lines:\n%s\nwant only the replicas; output:\n%s", got, out)
	}
}
