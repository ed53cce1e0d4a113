package testcluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// JobSetNamespace is the namespace of a JobSet controller started by Options.JobSet.
const JobSetNamespace = "jobset-system"

// Files of the JobSet controller in the binaries directory, written there by
// hack/cluster-tools.sh.
const (
	jobsetBinary = "jobset"
	// jobsetManifestDir holds the JobSet CRD (crd/*.yaml) and its webhook configurations
	// (webhook/manifests.yaml) as the JobSet module ships them.
	jobsetManifestDir = "jobset-manifests"
)

// JobSetResource is the resource of JobSets (jobset.x-k8s.io/v1alpha2).
var JobSetResource = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// jobsetPodWebhooks are the JobSet webhooks on pods, which only look at the pods of a JobSet
// (the patches of config/components/webhook in the JobSet module).
var jobsetPodWebhooks = []string{"mpod.kb.io", "vpod.kb.io"}

// startJobSet installs the JobSet CRD and webhook configurations, starts the jobset binary out
// of cluster with the admin kubeconfig, as startKueue does Kueue, and waits until its webhook
// answers: a dry-run JobSet comes back defaulted.
func (c *Cluster) startJobSet(ctx context.Context) error {
	begin := time.Now()
	if err := c.checkComponent(jobsetBinary); err != nil {
		return err
	}
	free, err := FreePorts(2)
	if err != nil {
		return err
	}
	dir := filepath.Join(c.Dir, "jobset")
	webhookPort, probePort := free[0], free[1]
	url := "https://" + net.JoinHostPort(NodeIP, strconv.Itoa(webhookPort))
	certs := filepath.Join(dir, "webhook-certs")
	c.logf("starting jobset (webhooks at %s)", url)
	if err := c.writeServingCert(certs); err != nil {
		return err
	}
	config, err := yaml.Marshal(map[string]any{
		"apiVersion":             "config.jobset.x-k8s.io/v1alpha1",
		"kind":                   "Configuration",
		"health":                 map[string]any{"healthProbeBindAddress": net.JoinHostPort(NodeIP, strconv.Itoa(probePort))},
		"metrics":                map[string]any{"bindAddress": "0"},
		"webhook":                map[string]any{"host": NodeIP, "port": webhookPort, "certDir": certs},
		"leaderElection":         map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{"enable": false},
		"clientConnection":       map[string]any{"qps": clientQPS, "burst": clientBurst},
	})
	if err != nil {
		return err
	}
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, config, 0o644); err != nil {
		return err
	}
	objs, crds, err := jobsetManifests(filepath.Join(c.bin, jobsetManifestDir), url, c.caPEM)
	if err != nil {
		return fmt.Errorf("jobset: %w", err)
	}
	if err := c.applyObjects(ctx, "jobset manifests", objs); err != nil {
		return err
	}
	if err := c.waitCRDsEstablished(ctx, crds); err != nil {
		return err
	}
	args := []string{"--config=" + configFile, "--kubeconfig=" + c.Kubeconfig}
	if err := c.startTier(component{jobsetBinary, args, nil}); err != nil {
		return err
	}
	if err := c.waitJobSetReady(ctx, probePort); err != nil {
		return err
	}
	c.logf("jobset ready after %s (cluster up %s)", time.Since(begin).Round(10*time.Millisecond), c.since())
	return nil
}

// jobsetManifests reads the CRD and webhook configurations that hack/cluster-tools.sh copied
// from the JobSet module into dir and rewrites them for a controller at url, whose certificate
// caPEM signed: every webhook's service replaced by url, and the pod webhooks limited to the
// pods of a JobSet. It returns the objects to apply, JobSetNamespace first, and the names of
// the CRDs.
func jobsetManifests(dir, url string, caPEM []byte) (objs []*unstructured.Unstructured, crds []string, err error) {
	objs, configs, err := readManifests(dir, JobSetNamespace)
	if err != nil {
		return nil, nil, err
	}
	for _, crd := range objs[1:] {
		crds = append(crds, crd.GetName())
	}
	caBundle := base64.StdEncoding.EncodeToString(caPEM)
	selector := map[string]any{"matchExpressions": []any{map[string]any{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}}}
	for _, wc := range configs {
		err := rewriteWebhooks(wc, "jobset-", url, caBundle, func(name string, hook map[string]any) {
			if slices.Contains(jobsetPodWebhooks, name) {
				hook["objectSelector"] = selector
			}
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "webhook", "manifests.yaml"), err)
		}
		objs = append(objs, wc)
	}
	return objs, crds, nil
}

// waitJobSetReady waits until the JobSet controller's /readyz answers OK on probePort and its
// webhook answers: a dry-run JobSet comes back with its defaults (a success policy).
func (c *Cluster) waitJobSetReady(ctx context.Context, probePort int) error {
	if err := c.waitReadyzAt(ctx, "jobset", probePort); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "jobset's webhook to default a JobSet", func(ctx context.Context) (bool, error) {
		js, err := dyn.Resource(JobSetResource).Namespace(metav1.NamespaceDefault).Create(ctx, jobsetProbe(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		if _, ok, _ := unstructured.NestedMap(js.Object, "spec", "successPolicy"); !ok {
			return false, fmt.Errorf("dry-run JobSet came back without the webhook's defaults")
		}
		return true, nil
	})
}

// jobsetProbe is a JobSet of one Job, created only as a dry run.
func jobsetProbe() *unstructured.Unstructured {
	pod := map[string]any{"restartPolicy": string(corev1.RestartPolicyNever), "containers": []any{
		map[string]any{"name": "main", "image": "registry.example/never-pulled:latest"}}}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": JobSetResource.GroupVersion().String(), "kind": "JobSet",
		"metadata": map[string]any{"name": "jobset-probe"},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "node", "replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": pod}}},
		}}},
	}}
}

// RunJobSetFor marks the pod template of each replicated Job of a JobSet (unstructured) as
// RunFor does: kwok keeps its pods Running for d before they succeed.
func RunJobSetFor(js *unstructured.Unstructured, d time.Duration) error {
	path := []string{"spec", "replicatedJobs"}
	jobs, _, err := unstructured.NestedSlice(js.Object, path...)
	if err != nil || len(jobs) == 0 {
		return fmt.Errorf("JobSet %s has no replicated Jobs (%v)", js.GetName(), err)
	}
	for _, j := range jobs {
		m, ok := j.(map[string]any)
		if !ok {
			return fmt.Errorf("JobSet %s: a replicated Job is not an object", js.GetName())
		}
		if err := unstructured.SetNestedField(m, d.String(), "template", "spec", "template", "metadata", "annotations", RunForAnnotation); err != nil {
			return err
		}
	}
	return unstructured.SetNestedSlice(js.Object, jobs, path...)
}
