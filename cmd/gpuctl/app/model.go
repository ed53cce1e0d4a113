package app

import (
	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/kube"
)

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

// resolve is the namespace to read from m: "" for all. Without -n or -A it is the
// kubeconfig context's namespace, or, when m is the daemon's API (--server), every namespace
// the token sees.
func (o *scopeOptions) resolve(ko *kube.Options, m cluster.Model) (string, error) {
	switch {
	case o.allNamespaces:
		return "", nil
	case o.namespace != "":
		return o.namespace, nil
	}
	if _, remote := m.(*remoteModel); remote {
		return "", nil
	}
	ns, err := ko.Namespace()
	if err != nil {
		return "", &ExitError{Code: ExitTrouble, Err: err}
	}
	return ns, nil
}
