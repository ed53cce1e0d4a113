package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func gpuctl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return gpuctlAs(t, testcluster.Current().Kubeconfig, args...)
}

// gpuctlAs runs the CLI with a kubeconfig of other credentials than the cluster's admin.
func gpuctlAs(t *testing.T, kubeconfig string, args ...string) (string, string, int) {
	t.Helper()
	return runGpuctl(t, append(args, "--kubeconfig", kubeconfig)...)
}

// runGpuctl runs the CLI with the arguments; an error is printed as main prints it.
func runGpuctl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := app.Run(t.Context(), app.Streams{Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

// copyTree copies examples/ so that the test can edit it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return dst
}

// TestDiffAndSyncExamples: diff shows the changes and exits 1; sync --dry-run writes nothing;
// sync applies; diff then exits 0; an edit shows as an update with its field; a deleted file
// is pruned by the next sync. The teams' objects are written as their tenants, under the
// tenant ClusterRole of deploy/ (installed by the local cluster).
func TestDiffAndSyncExamples(t *testing.T) {
	// The examples' services and notebooks run until deleted and take every GPU of gpu-t4-0
	// (dev-pool), which later tests schedule on.
	t.Cleanup(func() { deleteWorkloads(t, kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())) })
	repo := copyTree(t, "../../examples")
	out, errOut, code := gpuctl(t, "diff", repo, "--color", "never")
	if code != app.ExitFailed || !strings.Contains(out, "+ create Job default/qwen2-72b-fullft (training/qwen2-72b-fullft.yaml)") {
		t.Fatalf("first diff: exit %d\n%s\n%s", code, tail(out), errOut)
	}
	if !strings.Contains(out, "+22 in training-pool") {
		t.Errorf("summary lacks the GPU budget: %s", tail(out))
	}
	if _, _, code = gpuctl(t, "sync", "--local", repo, "--dry-run"); code != 0 {
		t.Fatalf("dry run exit %d", code)
	}
	if _, _, code = gpuctl(t, "diff", repo); code != app.ExitFailed {
		t.Fatalf("a dry run wrote something: diff exit %d", code)
	}
	out, errOut, code = gpuctl(t, "sync", "--local", repo, "--color", "never")
	if code != 0 || !strings.Contains(out, "sync: ") || strings.Contains(out, "failed") {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
	// Without --age-keys the examples' encrypted Secret (teams/alice/hf-token.sops.yaml) is
	// sealed: skipped, with exactly this line, and nothing else left to do.
	out, _, code = gpuctl(t, "diff", repo)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || lines[0] != sealedExampleSkipped ||
		!strings.HasPrefix(lines[1], "no changes") || !strings.HasSuffix(lines[1], ", 1 skipped)") {
		t.Fatalf("diff after sync: exit %d\n%s", code, out)
	}

	edit := filepath.Join(repo, "inference", "llama3-8b-inference.yaml")
	data, _ := os.ReadFile(edit)
	if err := os.WriteFile(edit, bytes.Replace(data, []byte("replicas: 2"), []byte("replicas: 3"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = gpuctl(t, "diff", repo, "--color", "never")
	if code != app.ExitFailed || !strings.Contains(out, "~ update Deployment default/llama3-8b-inference") ||
		!strings.Contains(out, "-  replicas: 2") || !strings.Contains(out, "+  replicas: 3") || !strings.Contains(out, "+1 in inference-pool") {
		t.Fatalf("diff of an edit: exit %d\n%s", code, out)
	}

	if err := os.Remove(filepath.Join(repo, "compute", "test-nginx.yaml")); err != nil {
		t.Fatal(err)
	}
	// diff shows what a prune takes away, whole (reconciler.Options.WholePrunes): a sync's
	// plan keeps the metadata of its prunes alone.
	out, _, code = gpuctl(t, "diff", repo, "--color", "never")
	if code != app.ExitFailed || !strings.Contains(out, "- delete Deployment default/test-nginx") ||
		!strings.Contains(out, "-  replicas: 2") || !strings.Contains(out, "image: nginx:latest") {
		t.Fatalf("diff of a removed file: exit %d\n%s", code, out)
	}
	out, _, code = gpuctl(t, "sync", "--local", repo, "--color", "never")
	// The table's columns are as wide as their widest cell ("skipped", the sealed Secret's).
	if code != 0 || !regexp.MustCompile(`(?m)^delete +Deployment +default +test-nginx +ok$`).MatchString(out) {
		t.Fatalf("sync after removing a file: exit %d\n%s", code, out)
	}
}

// sealedExampleSkipped is the line of a diff of examples/ without age keys that says the
// encrypted Secret of teams/alice is not decrypted and left as it is.
const sealedExampleSkipped = "= skipped Secret alice/hf-token (teams/alice/hf-token.sops.yaml): encrypted with SOPS and not decrypted here (no key): left as it is in the cluster"

// gone is err, or nil when it says the object is not found: another test's cleanup (the
// cluster is shared) may delete it between the list and the delete.
func gone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteWorkloads deletes the workloads gpuctl manages (Deployments, StatefulSets, Jobs) in
// every namespace, and waits until none of their pods holds a GPU.
func deleteWorkloads(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: keys.ManagedBy + "=" + keys.ManagedByValue}
	del := metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}
	var errs []error
	if l, err := kube.AppsV1().Deployments("").List(ctx, sel); err == nil {
		for _, o := range l.Items {
			errs = append(errs, gone(kube.AppsV1().Deployments(o.Namespace).Delete(ctx, o.Name, del)))
		}
	} else {
		errs = append(errs, err)
	}
	if l, err := kube.AppsV1().StatefulSets("").List(ctx, sel); err == nil {
		for _, o := range l.Items {
			errs = append(errs, gone(kube.AppsV1().StatefulSets(o.Namespace).Delete(ctx, o.Name, del)))
		}
	} else {
		errs = append(errs, err)
	}
	if l, err := kube.BatchV1().Jobs("").List(ctx, sel); err == nil {
		for _, o := range l.Items {
			errs = append(errs, gone(kube.BatchV1().Jobs(o.Namespace).Delete(ctx, o.Name, del)))
		}
	} else {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("delete the workloads: %v", err)
	}
	for {
		held, pods, err := gpusHeld(ctx, kube, "", sel.LabelSelector)
		if err == nil && held == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pods still hold %d GPUs two minutes after their workloads were deleted: %v (%v)", held, pods, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// gpusHeld counts the GPUs that the pods bound to node ("": any node) and matching the label
// selector hold for the scheduler (those not finished, terminating ones too), and names
// those pods.
func gpusHeld(ctx context.Context, kube kubernetes.Interface, node, selector string) (int64, []string, error) {
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName!=", LabelSelector: selector}
	if node != "" {
		opts.FieldSelector = "spec.nodeName=" + node
	}
	pods, err := kube.CoreV1().Pods("").List(ctx, opts)
	if err != nil {
		return 0, nil, err
	}
	var held int64
	var names []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var g int64
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Limits[keys.ResourceGPU]; ok {
				g += q.Value()
			}
		}
		if g > 0 {
			held += g
			names = append(names, fmt.Sprintf("%s/%s (%d on %s)", p.Namespace, p.Name, g, p.Spec.NodeName))
		}
	}
	return held, names, nil
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
