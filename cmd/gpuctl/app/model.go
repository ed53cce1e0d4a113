package app

import (
	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/kube"
)

// model is the read model that the read verbs (get, describe, logs, events, completion) ask:
// the cluster of the kubeconfig flags, read with the user's credentials. It is built here and
// nowhere else, so that another transport can answer the same verbs.
func model(_ *cobra.Command, ko *kube.Options) (cluster.Model, error) {
	client, err := kubeClient(ko)
	if err != nil {
		return nil, err
	}
	return &cluster.Reader{Client: client}, nil
}

// scopeOptions are the namespace flags of a read verb, as kubectl has them: -n NAMESPACE, or
// -A for all; neither means the namespace of the kubeconfig's context ("default" when it
// names none).
type scopeOptions struct {
	namespace     string
	allNamespaces bool
}

// bindFlags adds -n and -A; what describes what -n selects.
func (o *scopeOptions) bindFlags(cmd *cobra.Command, what string) {
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", what+" (default: the namespace of the kubeconfig's context)")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "in every namespace")
	cmd.MarkFlagsMutuallyExclusive("namespace", "all-namespaces")
}

// resolve is the namespace to read: "" for all.
func (o *scopeOptions) resolve(ko *kube.Options) (string, error) {
	switch {
	case o.allNamespaces:
		return "", nil
	case o.namespace != "":
		return o.namespace, nil
	}
	ns, err := ko.Namespace()
	if err != nil {
		return "", &ExitError{Code: ExitTrouble, Err: err}
	}
	return ns, nil
}
