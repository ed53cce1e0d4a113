package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/prometheus/client_golang/prometheus"
)

func apiHandler() http.Handler {
	return httpapi.New(httpapi.Options{Registry: prometheus.NewRegistry()})
}

func TestDefaultHTTPTimeouts(t *testing.T) {
	srv, err := newHTTPServer(apiHandler(), defaultHTTPTimeouts, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.TLSConfig != nil {
		t.Errorf("server without every timeout, or with TLS: %+v", srv)
	}
}

// A slow-loris client sends its headers, then trickles the body one byte at a time: the read
// timeout cuts it off instead of holding the connection (and a goroutine) for as long as it
// likes.
func TestSlowBodyIsCutOffAfterTheReadTimeout(t *testing.T) {
	readErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	})
	const readTimeout = 300 * time.Millisecond
	srv, err := newHTTPServer(h, httpTimeouts{ReadHeader: time.Second, Read: readTimeout, Write: time.Second, Idle: time.Second}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := startHTTP(srv, "127.0.0.1:0", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	const bodySize = 100 // at 50 ms a byte: 5 s
	if _, err := io.WriteString(conn, "POST /hooks/x HTTP/1.1\r\nHost: gpuctl\r\nContent-Length: 100\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range bodySize {
			if _, err := conn.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(io.Discard, conn) // until the server closes the connection
	elapsed := time.Since(start)
	if elapsed > 2*time.Second {
		t.Errorf("the connection was held %v; the read timeout is %v", elapsed, readTimeout)
	}
	select {
	case err := <-readErr:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("the handler read the body with %v, want a timeout", err)
		}
	case <-time.After(time.Second):
		t.Error("the handler never finished reading the body")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpuctl-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	return certFile, keyFile, cert
}

// With --tls-cert-file and --tls-key-file the server answers over TLS, and a plain HTTP
// request on the same port gets no answer of a route.
func TestTLSListener(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t)
	srv, err := newHTTPServer(apiHandler(), defaultHTTPTimeouts, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := startHTTP(srv, "127.0.0.1:0", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	tlsClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := tlsClient.Get("https://" + srv.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" || resp.TLS == nil {
		t.Errorf("GET https /healthz: %d %q (TLS %v)", resp.StatusCode, body, resp.TLS != nil)
	}

	plain := &http.Client{Timeout: 5 * time.Second}
	resp, err = plain.Get("http://" + srv.Addr + "/healthz")
	if err == nil {
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "ok") {
			t.Errorf("plain HTTP on the TLS port answered %d %q", resp.StatusCode, body)
		}
	}
}

func TestTLSFlagsGoTogether(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	for name, files := range map[string][2]string{
		"cert only":    {certFile, ""},
		"key only":     {"", keyFile},
		"swapped":      {keyFile, certFile},
		"no such file": {certFile + ".missing", keyFile},
	} {
		if _, err := newHTTPServer(apiHandler(), defaultHTTPTimeouts, files[0], files[1]); err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "BEGIN") {
			t.Errorf("%s: the error quotes the files: %v", name, err)
		}
	}
}
