package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// deployDir is the repository's deploy/ directory, relative to this package.
const deployDir = "../../deploy"

// prometheusOperatorGroup is the API group of the Prometheus Operator's kinds.
const prometheusOperatorGroup = "monitoring.coreos.com"

// imagesComponent is the kustomize Component that names gpuctl's images and their tag.
const imagesComponent = "images"

// TestDeployManifests builds every kustomization under deploy/ (found by walking the tree, so
// a new overlay is covered without a change here; Components are built by those that include
// them) and passes each object through the API server's validation (server-side dry-run). Each
// runs the images named in deploy/images at its tag, keeps its namespaced objects in
// gpuctl-system, and gives every container with a read-only root an emptyDir for each directory
// it writes to. The overlays' own promises are checked per directory.
func TestDeployManifests(t *testing.T) {
	images := readImages(t)
	dirs := kustomizations(t)
	for _, want := range []string{"base", "examples/git-source", "node-labeler"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("the walk of deploy/ found %v, not %s", dirs, want)
		}
	}
	cfg := testcluster.Current().RESTConfig()
	// deploy/node-labeler installs into the namespace that deploy/base creates.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: keys.SystemNamespace}}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			objs := buildDeploy(t, dir)
			dryRunApply(t, objs)
			kinds := map[string]int{}
			for _, u := range objs {
				kinds[u.GetKind()]++
				if u.GetNamespace() != "" && u.GetNamespace() != keys.SystemNamespace {
					t.Errorf("%s %s in namespace %s", u.GetKind(), u.GetName(), u.GetNamespace())
				}
				for _, c := range containers(t, u) {
					checkImage(t, u, c, images)
					checkWritable(t, u, c)
				}
			}
			if check, ok := overlayChecks[dir]; ok {
				check(t, objs, kinds)
			}
		})
	}
}

// overlayChecks are what each kustomization under deploy/ promises beyond the common checks.
var overlayChecks = map[string]func(t *testing.T, objs []*unstructured.Unstructured, kinds map[string]int){
	"examples/git-source": func(t *testing.T, objs []*unstructured.Unstructured, kinds map[string]int) {
		// Two ClusterRoles: the reconciler's and the tenants' (gpuctl-tenant).
		wantKinds(t, kinds, map[string]int{"Namespace": 1, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1,
			"Role": 1, "RoleBinding": 1, "Deployment": 1, "Service": 1})
		d := find(t, objs, "Deployment", "gpuctl-reconciler")
		replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		c := containers(t, d)[0]
		if replicas != 2 || !slices.Contains(c.Args, "--leader-elect") || !slices.Contains(c.Args, "--source=git:https://git.example.com/platform/gpu-jobs.git") ||
			!slices.Contains(c.Args, "--work-dir=/var/lib/gpuctl/git") {
			t.Errorf("deployment: replicas %d, args %v", replicas, c.Args)
		}
	},
	"base": func(t *testing.T, objs []*unstructured.Unstructured, kinds map[string]int) {
		// The reconciler's temporary files (a Git clone without --work-dir) go to /tmp.
		c := containers(t, find(t, objs, "Deployment", "gpuctl-reconciler"))[0]
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" && !m.ReadOnly }) {
			t.Errorf("no writable /tmp: %v", c.VolumeMounts)
		}
	},
	"monitoring": checkMonitoring,
	"node-labeler": func(t *testing.T, objs []*unstructured.Unstructured, kinds map[string]int) {
		wantKinds(t, kinds, map[string]int{"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "DaemonSet": 1,
			"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1})
	},
}

// kustomizations returns the directories under deploy/ that hold a kustomization (not a
// Component), relative to deploy/ with forward slashes.
func kustomizations(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(deployDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains([]string{"kustomization.yaml", "kustomization.yml", "Kustomization"}, d.Name()) {
			return err
		}
		var k types.Kustomization
		if err := readYAML(p, &k); err != nil {
			return err
		}
		if k.Kind == types.ComponentKind {
			return nil
		}
		rel, err := filepath.Rel(deployDir, filepath.Dir(p))
		dirs = append(dirs, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// readImages returns the images deploy/images sets, by name.
func readImages(t *testing.T) map[string]types.Image {
	t.Helper()
	var k types.Kustomization
	if err := readYAML(filepath.Join(deployDir, imagesComponent, "kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	images := map[string]types.Image{}
	for _, img := range k.Images {
		images[img.Name] = img
	}
	if len(images) == 0 {
		t.Fatal("deploy/images names no image")
	}
	return images
}

func readYAML(path string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, into)
}

// buildDeploy runs kustomize on deploy/dir, as `kubectl apply -k` does.
func buildDeploy(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(deployDir, dir))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		js, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(js, &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// dryRunApply server-side applies each object with dryRun=All (a Namespace for real: the
// namespaced objects need it).
func dryRunApply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := testcluster.Current().RESTConfig()
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	for _, u := range objs {
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if meta.IsNoMatchError(err) && u.GroupVersionKind().Group == prometheusOperatorGroup {
			// deploy/monitoring's ServiceMonitor and PrometheusRule: the local cluster has no
			// Prometheus Operator CRDs; test/monitoring checks them (promtool, kustomize).
			t.Logf("%s %s: not served here (no Prometheus Operator CRDs); checked by test/monitoring", u.GetKind(), u.GetName())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		opts := metav1.ApplyOptions{FieldManager: "deploy-test", DryRun: []string{metav1.DryRunAll}}
		if u.GetKind() == "Namespace" {
			opts.DryRun = nil
		}
		ri := dyn.Resource(m.Resource)
		if u.GetNamespace() != "" {
			_, err = ri.Namespace(u.GetNamespace()).Apply(ctx, u.GetName(), u, opts)
		} else {
			_, err = ri.Apply(ctx, u.GetName(), u, opts)
		}
		if err != nil {
			t.Errorf("%s %s rejected: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// podSpec returns the pod template's spec of a workload, or nil for other objects.
func podSpec(t *testing.T, u *unstructured.Unstructured) *corev1.PodSpec {
	t.Helper()
	tmpl, ok, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	if !ok {
		return nil
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &spec); err != nil {
		t.Fatalf("%s %s: pod spec: %v", u.GetKind(), u.GetName(), err)
	}
	return &spec
}

// containers returns a workload's containers and init containers.
func containers(t *testing.T, u *unstructured.Unstructured) []corev1.Container {
	t.Helper()
	spec := podSpec(t, u)
	if spec == nil {
		return nil
	}
	return append(slices.Clone(spec.InitContainers), spec.Containers...)
}

// checkImage: a container runs one of the images deploy/images names, at its tag.
func checkImage(t *testing.T, u *unstructured.Unstructured, c corev1.Container, images map[string]types.Image) {
	t.Helper()
	name, tag, _ := strings.Cut(c.Image, ":")
	img, ok := images[name]
	if !ok || img.NewTag == "" || tag != img.NewTag || img.NewName != "" {
		t.Errorf("%s %s: container %s runs %q; want one of deploy/images at its tag (%v)", u.GetKind(), u.GetName(), c.Name, c.Image, images)
	}
	if !strings.HasPrefix(name, "ghcr.io/gpuctl/") {
		t.Errorf("%s %s: image %s is not ghcr.io/gpuctl/<name>", u.GetKind(), u.GetName(), name)
	}
}

// checkWritable: a container with a read-only root file system writes each directory its
// arguments name (--work-dir) on a writable emptyDir.
func checkWritable(t *testing.T, u *unstructured.Unstructured, c corev1.Container) {
	t.Helper()
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		return
	}
	spec := podSpec(t, u)
	emptyDirs := map[string]bool{}
	for _, v := range spec.Volumes {
		emptyDirs[v.Name] = v.EmptyDir != nil
	}
	for _, arg := range c.Args {
		dir, ok := strings.CutPrefix(arg, "--work-dir=")
		if !ok {
			continue
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return !m.ReadOnly && emptyDirs[m.Name] && (dir == m.MountPath || strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/"))
		}) {
			t.Errorf("%s %s: container %s writes %s, which is on no writable emptyDir (mounts %v)", u.GetKind(), u.GetName(), c.Name, dir, c.VolumeMounts)
		}
	}
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

func wantKinds(t *testing.T, kinds, want map[string]int) {
	t.Helper()
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s objects, want %d (%v)", kinds[k], k, n, kinds)
		}
	}
}
