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
}

// credentials are generated per cluster and never leave its Dir.
type credentials struct {
	caPEM []byte // trusted by every client
	token string // bearer token of the admin, in group system:masters
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
		tokens: filepath.Join(d, "tokens.csv"),
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, err
	}
	caPEM, caKeyPEM, srvPEM, srvKeyPEM, err := tlsPair()
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
		f.caCert: caPEM, f.caKey: caKeyPEM, f.serverCert: srvPEM, f.serverKey: srvKeyPEM,
		f.saKey: saKeyPEM, f.saPub: saPubPEM, f.tokens: []byte(tokens),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return &credentials{caPEM: caPEM, token: token, files: f}, nil
}

// tlsPair returns a fresh ECDSA CA and a serving certificate it signed, all PEM-encoded.
func tlsPair() (caPEM, caKeyPEM, srvPEM, srvKeyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	now := time.Now().Add(-time.Hour)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpuctl-testcluster-ca"},
		NotBefore: now, NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now, NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(kubernetesServiceIP)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	caKeyPEM, err = ecKeyPEM(caKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	srvKeyPEM, err = ecKeyPEM(srvKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return certPEM(caDER), caKeyPEM, certPEM(srvDER), srvKeyPEM, nil
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
