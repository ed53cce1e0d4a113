package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/kube"
)

// status reports whether the cluster runs and is ready, and lists its nodes. It fails when the
// cluster is not running or not ready.
func status(dir string) error {
	pid := runningPid(dir)
	if pid == 0 {
		return fmt.Errorf("not running (no live serve process in %s)", dir)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg, err := (&kube.Options{Kubeconfig: kubeconfig}).RESTConfig(kube.UserAgent("gpuctl-cluster"))
	if err != nil {
		return fmt.Errorf("serve runs (pid %d) but: %w", pid, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return fmt.Errorf("serve runs (pid %d) but the API server is not ready: %w", pid, err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cluster running (pid %d) at %s, logs in %s\n", pid, cfg.Host, dir)
	printNodes(nodes.Items)
	printExport(dir)
	return nil
}

// printNodes writes a table of the nodes to stderr.
func printNodes(nodes []corev1.Node) {
	w := tabwriter.NewWriter(os.Stderr, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tREADY\tGPUS\tGPU-TYPE\tGPU-PRODUCT")
	for _, n := range nodes {
		ready := "False"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = string(c.Status)
			}
		}
		gpus := n.Status.Allocatable[keys.ResourceGPU]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", n.Name, ready, gpus.String(), n.Labels[keys.GPUType], n.Labels[keys.GPUProduct])
	}
	w.Flush()
}
