package testcluster

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Cluster-wide network settings.
const (
	// ServiceCIDR is the service cluster IP range.
	ServiceCIDR = "10.96.0.0/16"
	// kubernetesServiceIP is the first address of ServiceCIDR, the in-cluster API server.
	kubernetesServiceIP = "10.96.0.1"
	// saIssuer is the service-account token issuer.
	saIssuer = "https://kubernetes.default.svc.cluster.local"
	// NodeIP is the InternalIP of every fake node and the host IP of their pods: the address
	// of kwok's server, which answers as the nodes' kubelet (pod logs).
	NodeIP = "127.0.0.1"
)

// ports are the 127.0.0.1 ports of one cluster.
type ports struct {
	etcdClient, etcdPeer, apiserver int
	kubelet                         int // kwok's server: every fake node's kubelet endpoint
}

// etcdURL is the client URL of etcd.
func (p ports) etcdURL() string { return "http://127.0.0.1:" + strconv.Itoa(p.etcdClient) }

// etcdArgs runs a single-member etcd that trades durability for speed.
func etcdArgs(dir string, p ports) []string {
	peer := "http://127.0.0.1:" + strconv.Itoa(p.etcdPeer)
	return []string{
		"--name=testcluster",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + p.etcdURL(),
		"--advertise-client-urls=" + p.etcdURL(),
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=testcluster=" + peer,
		"--unsafe-no-fsync",
		"--snapshot-count=10000",
		"--log-level=warn",
	}
}

// apiserverArgs serves on 127.0.0.1 with the generated certificates, authenticates the admin by
// token and authorizes with Node and RBAC. It reaches a node's kubelet (pod logs) at the node's
// InternalIP, verifying kwok's serving certificate against the cluster CA.
func apiserverArgs(dir string, p ports, creds *credentials) []string {
	f := creds.files
	return []string{
		"--etcd-servers=" + p.etcdURL(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(p.apiserver),
		"--cert-dir=" + f.dir,
		"--tls-cert-file=" + f.serverCert,
		"--tls-private-key-file=" + f.serverKey,
		"--client-ca-file=" + f.caCert,
		"--token-auth-file=" + f.tokens,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=" + saIssuer,
		"--service-account-key-file=" + f.saPub,
		"--service-account-signing-key-file=" + f.saKey,
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority=" + f.caCert,
		"--kubelet-client-certificate=" + f.kubeletClientCert,
		"--kubelet-client-key=" + f.kubeletClientKey,
		"--profiling=false",
	}
}

// controllerManagerArgs runs every controller, including node lifecycle, without leader
// election or a serving port.
func controllerManagerArgs(kubeconfig string, creds *credentials) []string {
	f := creds.files
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--controllers=*",
		"--service-account-private-key-file=" + f.saKey,
		"--root-ca-file=" + f.caCert,
		"--cluster-signing-cert-file=" + f.caCert,
		"--cluster-signing-key-file=" + f.caKey,
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--kube-api-qps=" + strconv.Itoa(clientQPS),
		"--kube-api-burst=" + strconv.Itoa(clientBurst),
		"--profiling=false",
	}
}

// schedulerArgs runs the default scheduler without leader election or a serving port.
func schedulerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
	}
}

// newPorts picks free ports for every component.
func newPorts() (ports, error) {
	free, err := FreePorts(4)
	if err != nil {
		return ports{}, err
	}
	return ports{free[0], free[1], free[2], free[3]}, nil
}

// apiserverURL is the API server's address for clients.
func (p ports) apiserverURL() string { return fmt.Sprintf("https://127.0.0.1:%d", p.apiserver) }
