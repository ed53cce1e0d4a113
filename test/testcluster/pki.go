package testcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Names of the admin identity in the token file.
const (
	adminUser  = "gpuctl-admin"
	adminGroup = "system:masters"
)

// pkiFiles are the paths of the credentials written into <Dir>/pki.
type pkiFiles struct {
	dir                   string
	caCert, caKey         string // cluster CA, also the CSR signer
	serverCert, serverKey string // kube-apiserver serving certificate
	saKey, saPub          string // service-account token signing key pair (RSA)
	tokens                string // --token-auth-file
	kwokCert, kwokKey     string // kwok's serving certificate: the fake nodes' kubelet endpoint
	kubeletClientCert     string // kube-apiserver's client certificate towards the kubelets
	kubeletClientKey      string
}

// credentials are generated per cluster and never leave its Dir.
type credentials struct {
	ca    *authority // signs certificates of components started later (Kueue)
	caPEM []byte     // trusted by every client
	token string     // bearer token of the admin, in group system:masters
	files pkiFiles
}

// writeCredentials generates a CA, a serving certificate for 127.0.0.1 and the in-cluster
// names of the API server, an RSA service-account key pair and an admin token, and writes
// them into dir/pki.
func writeCredentials(dir string) (*credentials, error) {
	d := filepath.Join(dir, "pki")
	f := pkiFiles{
		dir: d, caCert: filepath.Join(d, "ca.crt"), caKey: filepath.Join(d, "ca.key"),
		serverCert: filepath.Join(d, "apiserver.crt"), serverKey: filepath.Join(d, "apiserver.key"),
		saKey: filepath.Join(d, "sa.key"), saPub: filepath.Join(d, "sa.pub"),
		tokens:   filepath.Join(d, "tokens.csv"),
		kwokCert: filepath.Join(d, "kwok.crt"), kwokKey: filepath.Join(d, "kwok.key"),
		kubeletClientCert: filepath.Join(d, "apiserver-kubelet-client.crt"),
		kubeletClientKey:  filepath.Join(d, "apiserver-kubelet-client.key"),
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, err
	}
	ca, err := newCA()
	if err != nil {
		return nil, err
	}
	srvPEM, srvKeyPEM, err := ca.sign(apiserverCert())
	if err != nil {
		return nil, err
	}
	kwokPEM, kwokKeyPEM, err := ca.sign(kubeletCert())
	if err != nil {
		return nil, err
	}
	clientPEM, clientKeyPEM, err := ca.sign(kubeletClientCert())
	if err != nil {
		return nil, err
	}
	saKeyPEM, saPubPEM, err := serviceAccountKey()
	if err != nil {
		return nil, err
	}
	token, err := randomHex(24)
	if err != nil {
		return nil, err
	}
	tokens := fmt.Sprintf("%s,%s,%s,%q\n", token, adminUser, adminUser, adminGroup)
	files := map[string][]byte{
		f.caCert: ca.certPEM, f.caKey: ca.keyPEM, f.serverCert: srvPEM, f.serverKey: srvKeyPEM,
		f.saKey: saKeyPEM, f.saPub: saPubPEM, f.tokens: []byte(tokens),
		f.kwokCert: kwokPEM, f.kwokKey: kwokKeyPEM, f.kubeletClientCert: clientPEM, f.kubeletClientKey: clientKeyPEM,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return &credentials{ca: ca, caPEM: ca.certPEM, token: token, files: f}, nil
}

// certValidity is how long the generated certificates are valid, from an hour ago.
const certValidity = 10 * 365 * 24 * time.Hour

// authority is the cluster CA: it signs the serving and client certificates and the CSRs.
type authority struct {
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
	certPEM, keyPEM []byte
	serial          int64
}

// newCA returns a fresh ECDSA CA.
func newCA() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpuctl-testcluster-ca"},
		NotBefore: now, NotAfter: now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := ecKeyPEM(key)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: certPEM(der), keyPEM: keyPEM, serial: 1}, nil
}

// sign issues a certificate of the template (its subject, names and usages) for a fresh key,
// valid for certValidity, and returns both PEM-encoded.
func (ca *authority) sign(tmpl *x509.Certificate) (certPEMBytes, keyPEMBytes []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca.serial++
	now := time.Now().Add(-time.Hour)
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big.NewInt(ca.serial), now, now.Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyPEMBytes, err = ecKeyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return certPEM(der), keyPEMBytes, nil
}

// apiserverCert is the API server's serving certificate: 127.0.0.1 and its in-cluster names.
func apiserverCert() *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(kubernetesServiceIP)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
}

// kubeletCert is kwok's serving certificate, the kubelet endpoint of every fake node: the
// nodes' InternalIP is NodeIP.
func kubeletCert() *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kwok-kubelet"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(NodeIP)},
		DNSNames:    []string{"localhost"},
	}
}

// kubeletClientCert is the API server's client certificate towards the kubelets, as kubeadm
// issues it (kwok does not check it; a kubelet would).
func kubeletClientCert() *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{adminGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// serviceAccountKey returns a fresh RSA key pair for signing service-account tokens.
func serviceAccountKey() (keyPEM, pubPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return keyPEM, pubPEM, nil
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func ecKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
