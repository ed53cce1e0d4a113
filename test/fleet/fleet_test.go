package fleet

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/gittest"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// pooled is the node that clusters/a/pool.yaml puts in a pool: both clusters have a node of
// that name (DefaultNodes), so that a label on b's would be a's pool file read by b.
const pooled = "gpu-a100-0"

// repository is the files of one repository of two clusters: a team's quota and training job
// that every cluster gets, a pool of a's node in clusters/a/, and a training job of the team
// in clusters/b/ that only b gets.
func repository() map[string]string {
	training := func(name string, gpus int) string {
		return fmt.Sprintf("kind: training\nversion: v0.1\njob: {name: %s}\nenvironment:\n  image: registry.example.com/train:v1\n"+
			"  command: [python, train.py]\nresources: {gpu: %d, cpu: 4, memory: 16Gi}\n", name, gpus)
	}
	return map[string]string{
		".gpuctl.yaml":                     "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"quotas/teams.yaml":                "kind: quota\nversion: v0.1\nmetadata: {name: teams}\nusers:\n  alice: {cpu: 64, memory: 256Gi, gpu: 8}\n",
		"teams/alice/sft.yaml":             training("sft", 2),
		"clusters/a/pool.yaml":             "kind: pool\nversion: v0.1\nmetadata: {name: a-pool}\nnodes:\n  " + pooled + ": {gpu-type: A100-80G}\n",
		"clusters/b/teams/alice/only.yaml": training("b-only", 1),
	}
}

// TestOneRepositoryTwoClusters is the first bar of issue 37 against two local control planes:
// each cluster's reconciler applies the shared files and its own directory only (a's pool
// labels a's node, never b's node of the same name; b's job is in b only); `gpuctl get jobs
// --all-clusters` and `gpuctl status --all-clusters` read both, and with cluster b stopped
// still print a's, name b unreachable and exit 1.
func TestOneRepositoryTwoClusters(t *testing.T) {
	repo := gittest.New(t, nil)
	revision := repo.Commit("two clusters", repository())[:12]
	clusters := startClusters(t, testcluster.DefaultNodes(), "a", "b")
	reconcilers := map[string]*reconciler{}
	for _, name := range []string{"a", "b"} {
		reconcilers[name] = startReconciler(t, clusters[name], name, repo.URL)
	}

	t.Run("each cluster gets its own", func(t *testing.T) {
		for name, c := range clusters {
			kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
			ctx := t.Context()
			quotas, err := kube.CoreV1().ResourceQuotas("alice").List(ctx, metav1.ListOptions{})
			if err != nil || len(quotas.Items) == 0 {
				t.Errorf("cluster %s: no ResourceQuota in alice (the shared quota file): %v", name, err)
			}
			if _, err := kube.BatchV1().Jobs("alice").Get(ctx, "sft", metav1.GetOptions{}); err != nil {
				t.Errorf("cluster %s: the shared job alice/sft: %v", name, err)
			}
			// In any namespace: read by a, b's file would not be in alice's directory.
			jobs, err := kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=b-only"})
			if err != nil {
				t.Fatalf("cluster %s: list jobs: %v", name, err)
			}
			var in []string
			for _, j := range jobs.Items {
				in = append(in, j.Namespace)
			}
			if name == "b" && !slices.Equal(in, []string{"alice"}) || name == "a" && len(in) != 0 {
				t.Errorf("cluster %s: Job b-only (clusters/b/teams/alice/) in namespaces %v; want in alice of b only", name, in)
			}
			node, err := kube.CoreV1().Nodes().Get(ctx, pooled, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("cluster %s: node %s: %v", name, pooled, err)
			}
			pool, labelled := node.Labels[keys.Pool]
			if name == "a" && pool != "a-pool" {
				t.Errorf("cluster a: node %s has %s=%q, want a-pool (clusters/a/pool.yaml)", pooled, keys.Pool, pool)
			}
			if name == "b" && labelled {
				t.Errorf("cluster b: node %s has %s=%q: clusters/a/pool.yaml labelled a node of b", pooled, keys.Pool, pool)
			}
		}
	})

	useConfig(t, fmt.Sprintf("clusters:\n  - name: a\n    context: %s\n    kubeconfig: %s\n  - name: b\n    context: %s\n    kubeconfig: %s\n",
		testcluster.ContextName, clusters["a"].Kubeconfig, testcluster.ContextName, clusters["b"].Kubeconfig))

	t.Run("both up", func(t *testing.T) {
		out, errOut, code := gpuctl(t, "get", "jobs", "-A", "--all-clusters")
		if code != 0 || errOut != "" || !regexp.MustCompile(`^CLUSTER +JOB ID +NAME +NAMESPACE +KIND `).MatchString(out) ||
			!hasRow(out, "a", "sft") || !hasRow(out, "b", "sft") || !hasRow(out, "b", "b-only") ||
			regexp.MustCompile(`(?m)^a +\S+ +b-only `).MatchString(out) {
			t.Errorf("get jobs -A --all-clusters: exit %d, want 0 with a's sft, b's sft and b-only\n%s%s", code, out, errOut)
		}
		out, errOut, code = gpuctl(t, "get", "pools", "--all-clusters")
		if code != 0 || !regexp.MustCompile(`(?m)^a +a-pool +1 `).MatchString(out) || regexp.MustCompile(`(?m)^b +a-pool `).MatchString(out) {
			t.Errorf("get pools --all-clusters: exit %d, want a's a-pool of 1 node, and not in b\n%s%s", code, out, errOut)
		}
		out, errOut, code = gpuctl(t, "status", "--all-clusters")
		if code != 0 || !regexp.MustCompile(`^CLUSTER +REVISION +RESULT +LAST SYNC +MESSAGE\n`).MatchString(out) ||
			!statusRow("a", revision, "Succeeded").MatchString(out) || !statusRow("b", revision, "Succeeded").MatchString(out) {
			t.Errorf("status --all-clusters: exit %d, want a row of each cluster, %s Succeeded\n%s%s", code, revision, out, errOut)
		}
	})

	// Cluster b goes: its reconciler, then its control plane (its kubeconfig stays).
	reconcilers["b"].stop()
	if err := clusters["b"].Stop(); err != nil {
		t.Fatalf("stop cluster b: %v", err)
	}

	t.Run("b stopped", func(t *testing.T) {
		unreachable := regexp.MustCompile(`(?m)^cluster b: unreachable: .*connection refused$`)
		out, errOut, code := gpuctl(t, "get", "jobs", "-A", "--all-clusters")
		if code != app.ExitFailed || !hasRow(out, "a", "sft") || regexp.MustCompile(`(?m)^b `).MatchString(out) ||
			!unreachable.MatchString(errOut) || strings.Contains(errOut, "cluster a") {
			t.Errorf("get jobs -A --all-clusters: exit %d, want 1 with a's rows, b named unreachable\n%s%s", code, out, errOut)
		}
		out, errOut, code = gpuctl(t, "get", "jobs", "-A", "--all-clusters", "-o", "json")
		var doc struct{ Items, Unreadable []struct{ Cluster string } }
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != app.ExitFailed || len(doc.Items) == 0 ||
			slices.ContainsFunc(doc.Items, func(it struct{ Cluster string }) bool { return it.Cluster != "a" }) ||
			len(doc.Unreadable) != 1 || doc.Unreadable[0].Cluster != "b" {
			t.Errorf("get jobs -o json: exit %d, %v, %+v; want a's items and b unreadable\n%s%s", code, err, doc, out, errOut)
		}
		out, errOut, code = gpuctl(t, "status", "--all-clusters")
		if code != app.ExitFailed || !statusRow("a", revision, "Succeeded").MatchString(out) ||
			!regexp.MustCompile(`(?m)^b +<none> +Unreachable +<none> +.*connection refused$`).MatchString(out) {
			t.Errorf("status --all-clusters: exit %d, want 1 with a's row Succeeded and b's Unreachable\n%s%s", code, out, errOut)
		}
	})
}

// hasRow says whether the table of get jobs --all-clusters has a row of job name in cluster.
func hasRow(table, cluster, name string) bool {
	return regexp.MustCompile(`(?m)^` + cluster + ` +\S+ +` + regexp.QuoteMeta(name) + ` +alice +training `).MatchString(table)
}

// statusRow matches the row of cluster in status --all-clusters with revision and result.
func statusRow(cluster, revision, result string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + cluster + ` +` + regexp.QuoteMeta(revision) + ` +` + result + ` +`)
}
