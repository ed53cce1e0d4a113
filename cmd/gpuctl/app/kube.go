package app

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/reconciler"
)

// restConfig loads the client configuration that --kubeconfig and --context choose; a bad one
// exits 2.
func restConfig(ko *kube.Options) (*rest.Config, error) {
	cfg, err := ko.RESTConfig(kube.UserAgent("gpuctl"))
	if err != nil {
		return nil, &ExitError{Code: ExitTrouble, Err: err}
	}
	return cfg, nil
}

// kubeClient builds a clientset from the kubeconfig flags.
func kubeClient(ko *kube.Options) (kubernetes.Interface, error) {
	cfg, err := restConfig(ko)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, &ExitError{Code: ExitTrouble, Err: err}
	}
	return client, nil
}

// kubeClients builds a clientset and a dynamic client (for Kueue's objects) from the
// kubeconfig flags.
func kubeClients(ko *kube.Options) (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := restConfig(ko)
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, &ExitError{Code: ExitTrouble, Err: err}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, &ExitError{Code: ExitTrouble, Err: err}
	}
	return client, dyn, nil
}

// manager builds the engine from the engine flags; bad flags exit 2.
func manager(eo *options.Engine, cfg *rest.Config) (*reconciler.Manager, error) {
	m, err := eo.Manager(cfg)
	if err != nil {
		return nil, &ExitError{Code: ExitTrouble, Err: err}
	}
	return m, nil
}
