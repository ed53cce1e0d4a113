package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestDeployManifests: deploy/examples/git-source builds with kustomize and every object passes
// the API server's validation (server-side dry-run); the Deployment runs 2 replicas with
// leader election and the source set by the one patch; the tenant ClusterRole is included.
func TestDeployManifests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../deploy/examples/git-source")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testcluster.Current().RESTConfig()
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	kinds := map[string]int{}
	for _, r := range rm.Resources() {
		js, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(js, &u.Object); err != nil {
			t.Fatal(err)
		}
		kinds[u.GetKind()]++
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		opts := metav1.ApplyOptions{FieldManager: "deploy-test", DryRun: []string{metav1.DryRunAll}}
		ri := dyn.Resource(m.Resource)
		if u.GetKind() == "Namespace" {
			opts.DryRun = nil // namespaced objects need it for real
		}
		if u.GetNamespace() != "" {
			_, err = ri.Namespace(u.GetNamespace()).Apply(ctx, u.GetName(), u, opts)
		} else {
			_, err = ri.Apply(ctx, u.GetName(), u, opts)
		}
		if err != nil {
			t.Errorf("%s %s rejected: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "Deployment" {
			replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			if replicas != 2 || !contains(args, "--leader-elect") || !contains(args, "--source=git:https://git.example.com/platform/gpu-jobs.git") {
				t.Errorf("deployment: replicas %d, args %v", replicas, args)
			}
		}
		if u.GetNamespace() != "" && u.GetNamespace() != keys.SystemNamespace {
			t.Errorf("%s %s in namespace %s", u.GetKind(), u.GetName(), u.GetNamespace())
		}
	}
	// Two ClusterRoles: the reconciler's and the tenants' (gpuctl-tenant).
	for k, want := range map[string]int{"Namespace": 1, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1,
		"Role": 1, "RoleBinding": 1, "Deployment": 1, "Service": 1} {
		if kinds[k] != want {
			t.Errorf("%d %s objects, want %d (%v)", kinds[k], k, want, kinds)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
