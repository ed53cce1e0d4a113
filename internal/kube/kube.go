package kube

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuctl/gpuctl/internal/version"
)

// Options are the flags that choose a cluster, as kubectl names them.
type Options struct {
	// Kubeconfig is the kubeconfig file; "" looks it up ($KUBECONFIG, ~/.kube/config, then
	// the pod's service account).
	Kubeconfig string
	// Context is the kubeconfig context; "" uses the file's current context.
	Context string
}

// BindFlags adds --kubeconfig and --context.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the pod's service account)")
	fs.StringVar(&o.Context, "context", "", "the kubeconfig context to use")
}

// UserAgent is the user agent of a gpuctl binary: "<binary>/<version>".
func UserAgent(binary string) string { return binary + "/" + version.String() }

// ErrNoConfiguration is returned (wrapped) when there is neither a kubeconfig nor a pod's
// service account.
var ErrNoConfiguration = errors.New("no kubeconfig found (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not running in a pod")

// RESTConfig loads the client configuration and sets its user agent (see UserAgent). Its
// errors start with "kubeconfig: ".
func (o *Options) RESTConfig(userAgent string) (*rest.Config, error) {
	cfg, err := o.loader().ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		err = ErrNoConfiguration
		if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
			// In a pod, but clientcmd found the service account unusable: say why.
			if _, icErr := rest.InClusterConfig(); icErr != nil {
				err = fmt.Errorf("%w: in-cluster configuration: %w", ErrNoConfiguration, icErr)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}

// loader loads the kubeconfig (or the pod's service account) as the flags choose.
func (o *Options) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.Context})
}

// Namespace is the namespace of the chosen context, as kubectl takes it when -n is not given:
// the context's namespace, "default" when it names none, the pod's own in a pod. Its errors
// start with "kubeconfig: ".
func (o *Options) Namespace() (string, error) {
	ns, _, err := o.loader().Namespace()
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	return ns, nil
}

// Clientset builds a typed client from RESTConfig.
func (o *Options) Clientset(userAgent string) (kubernetes.Interface, error) {
	cfg, err := o.RESTConfig(userAgent)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
