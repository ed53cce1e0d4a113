package testcluster

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ContextName is the name of the cluster, user and context in the kubeconfig a Cluster writes.
const ContextName = "gpuctl-local"

// Client limits of RESTConfig: high, since the API server is local and tests are bursty.
const (
	clientQPS   = 200
	clientBurst = 400
)

// writeKubeconfig writes a kubeconfig for the admin token to path.
func writeKubeconfig(path, server string, caPEM []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ContextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[ContextName] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: ContextName, Namespace: "default"}
	cfg.CurrentContext = ContextName
	return clientcmd.WriteToFile(*cfg, path)
}

// RESTConfig returns a new client configuration for the cluster's admin (group system:masters).
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.server,
		BearerToken:     c.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.caPEM...)},
		QPS:             clientQPS,
		Burst:           clientBurst,
	}
}
