package testcluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// KueueNamespace is the namespace of a Kueue started by Options.Kueue: the namespace of its
// Configuration, which its pod, Deployment and StatefulSet webhooks leave alone (as they do
// kube-system).
const KueueNamespace = "kueue-system"

// Files of Kueue in the binaries directory, written there by hack/cluster-tools.sh.
const (
	kueueBinary = "kueue"
	// kueueManifestDir holds Kueue's CRDs (crd/*.yaml) and its webhook configurations
	// (webhook/manifests.yaml) as the Kueue module ships them.
	kueueManifestDir = "kueue-manifests"
)

// kueueMetricsCertEnv names the environment variable from which the kueue binary built by
// hack/cluster-tools.sh reads the directory of its metrics certificate (tls.crt, tls.key),
// which upstream Kueue hard-codes as /etc/kueue/metrics/certs.
const kueueMetricsCertEnv = "KUEUE_METRICS_CERT_DIR"

// kueueFeatureGates turns off the visibility API server, which would need an APIService.
const kueueFeatureGates = "VisibilityOnDemand=false"

// KueueConfigFile is the repository path of the Kueue Configuration that deploy/ tells an
// admin to install; the local cluster runs Kueue with it, its server settings replaced.
const KueueConfigFile = "deploy/kueue/controller_manager_config.yaml"

// MultiKueueManagerConfigFile is the Kueue Configuration of a MultiKueue manager cluster
// (docs/fleet.md): KueueConfigFile with only the integrations whose kinds every worker serves.
const MultiKueueManagerConfigFile = "deploy/kueue/multikueue_manager_config.yaml"

// kueueConvertedCRDs are the plural names of the CRDs whose v1beta1 and v1beta2 Kueue converts
// through its /convert webhook (the patches of config/components/crd in the Kueue module).
var kueueConvertedCRDs = []string{"localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters"}

// kueueNamespacedWebhooks are the webhooks that must not see kube-system or KueueNamespace
// (the patches of config/components/webhook in the Kueue module).
var kueueNamespacedWebhooks = []string{
	"mpod.kb.io", "vpod.kb.io", "mdeployment.kb.io", "vdeployment.kb.io", "mstatefulset.kb.io", "vstatefulset.kb.io",
}

// kueueRun are the files and ports of one Kueue, all under <Dir>/kueue.
type kueueRun struct {
	dir                    string // <Dir>/kueue
	source                 string // the repository path of the Configuration it runs with
	config                 string // its Configuration
	webhookCerts           string // tls.crt and tls.key of its webhook server
	metricsCerts           string // tls.crt and tls.key of its (disabled) metrics server
	webhookPort, probePort int
}

// webhookURL is the base URL the API server calls Kueue's webhooks at.
func (k kueueRun) webhookURL() string {
	return "https://" + net.JoinHostPort(NodeIP, strconv.Itoa(k.webhookPort))
}

// startKueue installs Kueue's namespace, CRDs and webhook configurations, starts the kueue
// binary out of cluster with the admin kubeconfig, and waits until it answers: its /readyz, and
// its Job webhook suspending a Job with a queue-name label.
func (c *Cluster) startKueue(ctx context.Context, configFile string) error {
	begin := time.Now()
	if err := c.checkComponent(kueueBinary); err != nil {
		return err
	}
	free, err := FreePorts(2)
	if err != nil {
		return err
	}
	k := kueueRun{
		dir: filepath.Join(c.Dir, "kueue"), source: configFile, webhookPort: free[0], probePort: free[1],
	}
	if k.source == "" {
		k.source = KueueConfigFile
	}
	k.config = filepath.Join(k.dir, "config.yaml")
	k.webhookCerts, k.metricsCerts = filepath.Join(k.dir, "webhook-certs"), filepath.Join(k.dir, "metrics-certs")
	c.logf("starting kueue (webhooks at %s)", k.webhookURL())
	if err := c.writeKueueFiles(k); err != nil {
		return fmt.Errorf("kueue: %w", err)
	}
	objs, crds, err := kueueManifests(filepath.Join(c.bin, kueueManifestDir), k.webhookURL(), c.caPEM)
	if err != nil {
		return fmt.Errorf("kueue: %w", err)
	}
	if err := c.applyObjects(ctx, "kueue manifests", objs); err != nil {
		return err
	}
	// Kueue exits if its kinds are not served yet.
	if err := c.waitCRDsEstablished(ctx, crds); err != nil {
		return err
	}
	c.logf("kueue's %d CRDs established after %s", len(crds), time.Since(begin).Round(10*time.Millisecond))
	args := []string{"--config=" + k.config, "--kubeconfig=" + c.Kubeconfig, "--feature-gates=" + kueueFeatureGates}
	if err := c.startTier(component{kueueBinary, args, []string{kueueMetricsCertEnv + "=" + k.metricsCerts}}); err != nil {
		return err
	}
	if err := c.waitKueueReady(ctx, k); err != nil {
		return err
	}
	c.logf("kueue ready after %s (cluster up %s)", time.Since(begin).Round(10*time.Millisecond), c.since())
	return nil
}

// writeKueueFiles writes Kueue's webhook and metrics certificates for NodeIP, signed by the
// cluster CA, and its Configuration.
func (c *Cluster) writeKueueFiles(k kueueRun) error {
	for _, d := range []string{k.webhookCerts, k.metricsCerts} {
		if err := c.writeServingCert(d); err != nil {
			return err
		}
	}
	obj, err := kueueConfig(k)
	if err != nil {
		return err
	}
	cfg, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	return os.WriteFile(k.config, cfg, 0o644)
}

// writeServingCert writes tls.crt and tls.key of a webhook or metrics server at NodeIP (Kueue's,
// JobSet's), signed by the cluster CA, into dir.
func (c *Cluster) writeServingCert(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cert, key, err := c.ca.sign(kueueCert())
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), cert, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600)
}

// kueueCert is the serving certificate of Kueue's webhook (and metrics) server at NodeIP, and
// of JobSet's.
func kueueCert() *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kueue-webhook"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(NodeIP)},
		DNSNames:    []string{"localhost"},
	}
}

// kueueConfig is k.source's Configuration (KueueConfigFile's by default) (config.kueue.x-k8s.io/v1beta2) for a
// controller out of cluster: webhooks on NodeIP with the certificates of writeKueueFiles, no
// metrics server, no leader election, no certificate management of its own, and the client
// limits of RESTConfig, so that admission is not throttled. The integrations, the namespaces
// they leave alone and waitForPodsReady are the file's.
func kueueConfig(k kueueRun) (map[string]any, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	docs, err := readYAMLFile(filepath.Join(root, k.source))
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 || docs[0].GetKind() != "Configuration" {
		return nil, fmt.Errorf("%s: want one Kueue Configuration", k.source)
	}
	cfg := docs[0].Object
	for key, v := range map[string]any{
		"namespace":              KueueNamespace,
		"health":                 map[string]any{"healthProbeBindAddress": net.JoinHostPort(NodeIP, strconv.Itoa(k.probePort))},
		"metrics":                map[string]any{"bindAddress": "0"},
		"webhook":                map[string]any{"host": NodeIP, "port": k.webhookPort, "certDir": k.webhookCerts},
		"leaderElection":         map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{"enable": false},
		"clientConnection":       map[string]any{"qps": clientQPS, "burst": clientBurst},
	} {
		cfg[key] = v
	}
	return cfg, nil
}

// kueueManifests reads the CRDs and webhook configurations that hack/cluster-tools.sh copied
// from the Kueue module into dir and rewrites them for a Kueue at url, whose certificate caPEM
// signed, as Kueue's kustomize overlays and its own integration tests do: the conversion webhook
// on kueueConvertedCRDs, every webhook's service replaced by url, and the namespace selector of
// kueueNamespacedWebhooks. It returns the objects to apply, KueueNamespace first, and the names
// of the CRDs.
func kueueManifests(dir, url string, caPEM []byte) (objs []*unstructured.Unstructured, crds []string, err error) {
	caBundle := base64.StdEncoding.EncodeToString(caPEM)
	objs, configs, err := readManifests(dir, KueueNamespace)
	if err != nil {
		return nil, nil, err
	}
	for _, crd := range objs[1:] {
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		if slices.Contains(kueueConvertedCRDs, plural) {
			conversion := map[string]any{"strategy": "Webhook", "webhook": map[string]any{
				"clientConfig":             map[string]any{"url": url + "/convert", "caBundle": caBundle},
				"conversionReviewVersions": []any{"v1"},
			}}
			if err := unstructured.SetNestedField(crd.Object, conversion, "spec", "conversion"); err != nil {
				return nil, nil, fmt.Errorf("CRD %s: %w", crd.GetName(), err)
			}
		}
		crds = append(crds, crd.GetName())
	}
	for _, wc := range configs {
		err := rewriteWebhooks(wc, "kueue-", url, caBundle, func(name string, hook map[string]any) {
			if slices.Contains(kueueNamespacedWebhooks, name) {
				hook["namespaceSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
					"key": corev1.LabelMetadataName, "operator": "NotIn", "values": []any{"kube-system", KueueNamespace},
				}}}
			}
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "webhook", "manifests.yaml"), err)
		}
		objs = append(objs, wc)
	}
	return objs, crds, nil
}

// readManifests reads what hack/cluster-tools.sh copied from a controller's module into dir:
// its CRDs (crd/*.yaml) and its webhook configurations (webhook/manifests.yaml). objs are the
// Namespace namespace, then the CRDs.
func readManifests(dir, namespace string) (objs, webhookConfigs []*unstructured.Unstructured, err error) {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	objs = append(objs, ns)
	files, err := filepath.Glob(filepath.Join(dir, "crd", "*.yaml"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no CRDs in %s; %s copies them there", filepath.Join(dir, "crd"), toolsScript)
	}
	for _, f := range files {
		fileObjs, err := readYAMLFile(f)
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, fileObjs...)
	}
	webhookConfigs, err = readYAMLFile(filepath.Join(dir, "webhook", "manifests.yaml"))
	return objs, webhookConfigs, err
}

// rewriteWebhooks points every webhook of a Mutating- or ValidatingWebhookConfiguration at url
// plus its service path, trusting caBundle, lets edit change each webhook by its name, and
// prefixes the configuration's name with prefix.
func rewriteWebhooks(wc *unstructured.Unstructured, prefix, url, caBundle string, edit func(name string, hook map[string]any)) error {
	wc.SetName(prefix + wc.GetName())
	hooks, _, err := unstructured.NestedSlice(wc.Object, "webhooks")
	if err != nil {
		return err
	}
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: webhook %d is not an object", wc.GetName(), i)
		}
		name, _, _ := unstructured.NestedString(hook, "name")
		path, ok, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
		if !ok {
			return fmt.Errorf("%s: webhook %s has no clientConfig.service.path", wc.GetName(), name)
		}
		hook["clientConfig"] = map[string]any{"url": url + path, "caBundle": caBundle}
		edit(name, hook)
		hooks[i] = hook
	}
	return unstructured.SetNestedSlice(wc.Object, hooks, "webhooks")
}

// readYAMLFile returns the objects of a YAML file.
func readYAMLFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeYAML(path, data)
}

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// waitCRDsEstablished waits until every named CRD (Kueue's, JobSet's) has condition
// Established.
func (c *Cluster) waitCRDsEstablished(ctx context.Context, names []string) error {
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "CRDs to be Established", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			crd, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !hasCondition(crd, "Established") {
				return false, fmt.Errorf("CRD %s not Established yet", name)
			}
		}
		return true, nil
	})
}

// hasCondition reports whether u's status has condition typ with status True.
func hasCondition(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cond := range conds {
		m, _ := cond.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// waitKueueReady waits until Kueue's /readyz answers OK on its probe port and its Job webhook
// answers: a dry-run Job with a queue-name label comes back suspended.
func (c *Cluster) waitKueueReady(ctx context.Context, k kueueRun) error {
	if err := c.waitReadyzAt(ctx, "kueue", k.probePort); err != nil {
		return err
	}
	return c.waitFor(ctx, "kueue's Job webhook to suspend a queued Job", func(ctx context.Context) (bool, error) {
		job, err := c.client.BatchV1().Jobs(metav1.NamespaceDefault).Create(ctx, kueueProbeJob(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		if job.Spec.Suspend == nil || !*job.Spec.Suspend {
			return false, fmt.Errorf("dry-run Job with label %s came back not suspended", keys.KueueQueueName)
		}
		return true, nil
	})
}

// waitReadyzAt waits until the /readyz of a controller's probe server on NodeIP:port answers
// OK.
func (c *Cluster) waitReadyzAt(ctx context.Context, name string, port int) error {
	readyz := "http://" + net.JoinHostPort(NodeIP, strconv.Itoa(port)) + "/readyz"
	return c.waitFor(ctx, name+" "+readyz, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", readyz, resp.Status)
		}
		return true, nil
	})
}

// kueueProbeJob is a Job with a queue-name label, created only as a dry run: Kueue's webhook
// suspends it.
func kueueProbeJob() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "kueue-probe", Labels: map[string]string{keys.KueueQueueName: keys.KueueLocalQueue}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "registry.example/never-pulled:latest"}},
		}}},
	}
}
