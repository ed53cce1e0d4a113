package render_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// webDeployment is a plain Deployment web with one container main.
const webDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n" +
	"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" +
	"    spec:\n      containers:\n        - name: main\n          image: nginx\n"

// patchedKustomization is a kustomization over a gpuctl training file and a plain Deployment,
// changed by a strategic-merge patch file of each, a JSON6902 patch file, an inline JSON6902
// patch, namePrefix and a ConfigMap generator.
func patchedKustomization(dir string) map[string]string {
	return map[string]string{
		dir + "/kustomization.yaml": "resources: [train.yaml, web.yaml]\nnamePrefix: prod-\n" +
			"patches:\n  - path: memorylimit_patch.yaml\n  - path: web_patch.yaml\n" +
			"  - target: {group: batch, version: v1, kind: Job, name: sft}\n    path: train_json6902.yaml\n" +
			"  - target: {group: apps, version: v1, kind: Deployment, name: web}\n    patch: |-\n      - {op: add, path: /spec/replicas, value: 3}\n" +
			"configMapGenerator:\n  - name: gen\n    literals: [a=b]\n",
		dir + "/train.yaml": training,
		dir + "/web.yaml":   webDeployment,
		dir + "/memorylimit_patch.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: sft\nspec:\n  template:\n    spec:\n" +
			"      containers:\n        - name: sft\n          resources:\n            limits: {memory: 1Gi}\n",
		dir + "/web_patch.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations: {patched: \"yes\"}\nspec:\n  template:\n    spec:\n" +
			"      containers:\n        - name: main\n          resources:\n            limits: {memory: 1Gi}\n",
		dir + "/train_json6902.yaml": "- op: add\n  path: /spec/backoffLimit\n  value: 2\n",
	}
}

// objectOf returns the one rendered object of a kind, failing the test otherwise.
func objectOf(t *testing.T, res *render.Result, kind string) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	for _, o := range res.Objects {
		if o.GetKind() == kind {
			if found != nil {
				t.Fatalf("two %s objects: %s and %s", kind, found.GetName(), o.GetName())
			}
			found = o
		}
	}
	if found == nil {
		t.Fatalf("no %s rendered", kind)
	}
	return found
}

// TestKustomizeSourceIsTheResourceFile: objects that kustomize patches keep, as their source,
// the file that declares them (a gpuctl file or a plain manifest), never a patch file; what a
// generator creates names the kustomization; JSON6902 patch files are kustomize's input, not
// documents. In an admin directory and in a team's alike.
func TestKustomizeSourceIsTheResourceFile(t *testing.T) {
	for _, dir := range []string{"app", "teams/alice/app"} {
		t.Run(dir, func(t *testing.T) {
			files := patchedKustomization(dir)
			files[".gpuctl.yaml"] = teamsConfig
			res, err := renderFiles(t, files)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			job, web, gen := objectOf(t, res, "Job"), objectOf(t, res, "Deployment"), objectOf(t, res, "ConfigMap")
			for _, c := range []struct {
				o    *unstructured.Unstructured
				name string
				src  string
			}{{job, "prod-sft", dir + "/train.yaml"}, {web, "prod-web", dir + "/web.yaml"}, {gen, "prod-gen-", dir + "/kustomization.yaml"}} {
				if !strings.HasPrefix(c.o.GetName(), c.name) {
					t.Errorf("%s: name %q, want %s", object.RefOf(c.o).String(), c.o.GetName(), c.name)
				}
				if got := c.o.GetAnnotations()[keys.Source]; got != c.src {
					t.Errorf("%s: source %q, want %q", object.RefOf(c.o).String(), got, c.src)
				}
			}
			// the patches were applied
			if v, _, _ := unstructured.NestedInt64(job.Object, "spec", "backoffLimit"); v != 2 {
				t.Errorf("the JSON6902 patch file was not applied: backoffLimit %d", v)
			}
			if v, _, _ := unstructured.NestedInt64(web.Object, "spec", "replicas"); v != 3 {
				t.Errorf("the inline JSON6902 patch was not applied: replicas %d", v)
			}
			for _, o := range []*unstructured.Unstructured{job, web} {
				cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				if mem, _, _ := unstructured.NestedString(cs[0].(map[string]any), "resources", "limits", "memory"); mem != "1Gi" {
					t.Errorf("%s: the strategic-merge patch file was not applied: memory limit %q", object.RefOf(o).String(), mem)
				}
			}
			if web.GetAnnotations()["patched"] != "yes" {
				t.Errorf("the patch's own annotation was lost: %v", web.GetAnnotations())
			}
		})
	}
}

// TestKustomizeGeneratorSourceIsItsKustomization: a generator of a base names the base's
// kustomization; the overlay's patch does not become the source of what it patches.
func TestKustomizeGeneratorSourceIsItsKustomization(t *testing.T) {
	res, err := renderFiles(t, map[string]string{
		"base/kustomization.yaml":    "resources: [web.yaml]\nconfigMapGenerator:\n  - name: gen\n    literals: [a=b]\n",
		"base/web.yaml":              webDeployment,
		"overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: prod-\npatches:\n  - path: web_patch.yaml\n",
		"overlay/web_patch.yaml":     "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2}\n",
	})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if got := objectOf(t, res, "Deployment").GetAnnotations()[keys.Source]; got != "base/web.yaml" {
		t.Errorf("Deployment source %q, want base/web.yaml", got)
	}
	if got := objectOf(t, res, "ConfigMap").GetAnnotations()[keys.Source]; got != "base/kustomization.yaml" {
		t.Errorf("generated ConfigMap source %q, want base/kustomization.yaml", got)
	}
}

// TestKustomizeSourceCannotBeForged: a patch or commonAnnotations that writes the source
// annotation cannot point it outside the files of the build.
func TestKustomizeSourceCannotBeForged(t *testing.T) {
	res, err := renderFiles(t, map[string]string{
		"app/kustomization.yaml": "resources: [web.yaml]\ncommonAnnotations: {g8s.host/source: ../../etc/passwd}\n",
		"app/web.yaml":           webDeployment,
	})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if got := objectOf(t, res, "Deployment").GetAnnotations()[keys.Source]; got != "app/kustomization.yaml" {
		t.Errorf("Deployment source %q, want the kustomization app/kustomization.yaml", got)
	}
}

// TestKustomizeSourceStaysInTheTeam: a team's patch cannot make its object claim to come from
// another team's file.
func TestKustomizeSourceStaysInTheTeam(t *testing.T) {
	res, err := renderFiles(t, map[string]string{
		".gpuctl.yaml":                 teamsConfig,
		"teams/bob/cm.yaml":            configMap,
		"teams/bob/kustomization.yaml": "resources: [cm.yaml]\n",
		"teams/alice/kustomization.yaml": "resources: [web.yaml]\npatches:\n  - patch: |-\n" +
			"      {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: alice, annotations: {g8s.host/source: teams/bob/cm.yaml}}}\n",
		"teams/alice/web.yaml": webDeployment,
	})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if got := objectOf(t, res, "Deployment").GetAnnotations()[keys.Source]; got != "teams/alice/kustomization.yaml" {
		t.Errorf("Deployment source %q, want the kustomization teams/alice/kustomization.yaml", got)
	}
}
