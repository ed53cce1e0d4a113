package deploytest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// TestDeployManifests: deploy/node-labeler builds with kustomize, its objects pass the API
// server's validation, and the binary does its job with nothing but the ServiceAccount's
// RBAC (get and patch nodes) and a token bound to a pod on its node, as the DaemonSet's pods
// have (the admission policy checks the token's node).
func TestDeployManifests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := install(t)
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if m.kinds[k] != 1 {
			t.Errorf("%d %s objects, want 1 (%v)", m.kinds[k], k, m.kinds)
		}
	}
	if m.ds == nil {
		t.Fatal("no DaemonSet")
	}
	checkDaemonSet(t, m.ds)

	// The binary with the ServiceAccount's token only.
	const node = "nl-rbac-0"
	addNode(t, node)
	tok := labelerToken(t, node)
	waitEnforced(t, func() error { // so that the binary runs under the policy
		_, err := clientFor(tok).CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/x":"y"}}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	kubeconfig := writeKubeconfig(t, tok)
	cmd, out := labeler.Command(t, "--oneshot", "--node-name", node, "--nvml", "mock:dgxh100", "--kubeconfig", kubeconfig)
	if err := cmd.Run(); err != nil {
		t.Fatalf("with the ServiceAccount's RBAC: %v\n%s", err, out)
	}
	client := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	labels := nodeLabels(t, client, node)
	if labels[keys.GPUType] != "h100-80g" {
		t.Errorf("labels %v", labels)
	}
	// And it cannot do more: no listing nodes, no creating one.
	sa := kubernetes.NewForConfigOrDie(restConfig(t, kubeconfig))
	if _, err := sa.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list nodes as the labeler: %v, want Forbidden", err)
	}
}

// manifests are the objects of deploy/node-labeler, installed in the cluster (the DaemonSet
// only as a dry run).
type manifests struct {
	kinds map[string]int
	ds    *appsv1.DaemonSet
}

var (
	installOnce sync.Once
	installed   manifests
	installErr  error
)

// install builds deploy/node-labeler with kustomize and creates its objects, once per package.
func install(t *testing.T) manifests {
	t.Helper()
	installOnce.Do(func() { installed, installErr = installManifests() })
	if installErr != nil {
		t.Fatal(installErr)
	}
	return installed
}

func installManifests() (manifests, error) {
	m := manifests{kinds: map[string]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../deploy/node-labeler")
	if err != nil {
		return m, err
	}
	client := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: keys.SystemNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return m, err
	}
	decode := serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()
	var errs []error
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return m, err
		}
		obj, _, err := decode.Decode(y, nil, nil)
		if err != nil {
			return m, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		m.kinds[r.GetKind()]++
		if strings.HasPrefix(r.GetKind(), "ValidatingAdmissionPolicy") && r.GetNamespace() != "" {
			errs = append(errs, fmt.Errorf("%s: a cluster-scoped object in namespace %s", r.CurId(), r.GetNamespace()))
		}
		if err := create(ctx, client, obj); err != nil {
			errs = append(errs, fmt.Errorf("%s rejected: %w", r.CurId(), err))
		}
		if d, ok := obj.(*appsv1.DaemonSet); ok {
			m.ds = d
		}
	}
	return m, errors.Join(errs...)
}

func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	if ds.Namespace != keys.SystemNamespace || spec.ServiceAccountName != "gpuctl-node-labeler" {
		t.Errorf("daemonset %s/%s, service account %q", ds.Namespace, ds.Name, spec.ServiceAccountName)
	}
	if spec.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("node selector %v", spec.NodeSelector)
	}
	if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == keys.ResourceGPU }) {
		t.Errorf("no toleration of %s taints: %v", keys.ResourceGPU, spec.Tolerations)
	}
	ctr := spec.Containers[0]
	nodeName := slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	})
	if !nodeName || !slices.Contains(ctr.Args, "--nvml=real") {
		t.Errorf("container env %v, args %v", ctr.Env, ctr.Args)
	}
	if _, ok := ctr.Resources.Limits[keys.ResourceGPU]; ok {
		t.Error("the labeler requests a GPU")
	}
}

// create creates RBAC and admission objects for real and the rest as a server-side dry run.
func create(ctx context.Context, client kubernetes.Interface, obj runtime.Object) error {
	var err error
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		_, err = client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRole:
		_, err = client.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRoleBinding:
		_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
	case *admissionv1.ValidatingAdmissionPolicy:
		_, err = client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		_, err = client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
	case *appsv1.DaemonSet:
		_, err = client.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	default:
		return nil
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func writeKubeconfig(t *testing.T, token string) string {
	t.Helper()
	rc := testcluster.Current().RESTConfig()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData, CertificateAuthority: rc.CAFile}
	cfg.AuthInfos["labeler"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["labeler"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "labeler"}
	cfg.CurrentContext = "labeler"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func restConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func ptr[T any](v T) *T { return &v }
