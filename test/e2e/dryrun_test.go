package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/testcluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// renderedTrees are the trees whose objects must pass the API server's validation: examples/
// and every valid seed example.
func renderedTrees(t *testing.T) []string {
	trees := []string{"../../examples"}
	seeds, err := filepath.Glob("../../render/testdata/seeds/*")
	if err != nil {
		t.Fatal(err)
	}
	return append(trees, seeds...)
}

// TestRenderedObjectsPassServerSideDryRun sends every rendered object to the API server as a
// server-side apply with dryRun=All: the server's own validation (schemas, names, probes,
// quantities, selectors) must accept all of them. Each tree's objects go to namespaces of their
// own, created for real first, since a dry run does not persist them.
func TestRenderedObjectsPassServerSideDryRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := testcluster.Current().RESTConfig()
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	apply := func(u *unstructured.Unstructured, dryRun bool) error {
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			return err
		}
		opts := metav1.ApplyOptions{FieldManager: keys.FieldManager, Force: true}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		ri := dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ns := u.GetNamespace()
			if ns == "" {
				ns = keys.DefaultNamespace // as kubectl apply does
			}
			_, err = ri.Namespace(ns).Apply(ctx, u.GetName(), u, opts)
		} else {
			_, err = ri.Apply(ctx, u.GetName(), u, opts)
		}
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": keys.SystemNamespace}}}
	if err := apply(ns, false); err != nil {
		t.Fatal(err)
	}
	total := 0
	trees := renderedTrees(t)
	treeIndex := func(tree string) int { return slices.Index(trees, tree) }
	for _, tree := range trees {
		res, err := render.New(render.Options{}).Render(filesys.MakeFsOnDisk(), tree)
		var ve *render.ValidationError
		if errors.As(err, &ve) {
			continue // invalid seed examples render nothing; their errors are golden-tested
		}
		if err != nil {
			t.Fatalf("%s: %v", tree, err)
		}
		for _, o := range res.Objects {
			// Each tree gets namespaces of its own, apart from other tests' objects.
			if o.GetNamespace() != "" {
				o.SetNamespace(fmt.Sprintf("dryrun-%d-%s", treeIndex(tree), o.GetNamespace()))
				ensureNamespace(t, apply, o.GetNamespace())
			}
			if err := apply(o, true); err != nil {
				t.Errorf("%s: %s rejected by the API server: %v", tree, object.RefOf(o).String(), err)
			}
			total++
		}
	}
	// A control: the same path must reject what the API server forbids, or it proves nothing.
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "bad", "namespace": "default"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Always",
			"containers": []any{map[string]any{"name": "c", "image": "x"}}}}}}}
	if err := apply(bad, true); err == nil || !apierrors.IsInvalid(err) {
		t.Fatalf("a Job with restartPolicy Always passed the dry run: %v", err)
	}
	if total < 40 {
		t.Fatalf("only %d objects were checked", total)
	}
	t.Logf("%d rendered objects passed server-side dry-run", total)
}

func ensureNamespace(t *testing.T, apply func(*unstructured.Unstructured, bool) error, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name}}}
	if err := apply(ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", name, err)
	}
}
