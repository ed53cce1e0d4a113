package app

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// httpTimeouts bound how long a client may hold the HTTP server: to send the request line and
// headers (ReadHeader), the whole request (Read: a slow-loris body is cut off), to be sent the
// answer (Write, from the end of the request's headers), and to keep an idle connection open
// (Idle). A streaming route lifts Read and Write for its own requests (httpapi.Streaming).
type httpTimeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// defaultHTTPTimeouts: every route answers within seconds (a plan of a large cluster in
// tens of seconds), webhook bodies are small, and clients poll the page every 30 s.
var defaultHTTPTimeouts = httpTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second,
	Write: 60 * time.Second, Idle: 120 * time.Second}

// maxHeaderBytes caps a request's headers (the default is 1 MiB).
const maxHeaderBytes = 64 << 10

// newHTTPServer builds the daemon's HTTP server with the timeouts; over TLS when certFile and
// keyFile are given (both or neither), their key pair loaded now so that a bad one fails at
// start.
func newHTTPServer(handler http.Handler, t httpTimeouts, certFile, keyFile string) (*http.Server, error) {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		WriteTimeout: t.Write, IdleTimeout: t.Idle, MaxHeaderBytes: maxHeaderBytes}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	return srv, nil
}

// startHTTP listens on addr and serves srv in the background, over TLS when srv has a TLS
// configuration (a plain HTTP request on that port gets 400); srv.Addr becomes the address
// listened on.
func startHTTP(srv *http.Server, addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv.Addr = ln.Addr().String()
	if srv.ErrorLog == nil { // TLS handshake errors, timeouts of clients: the clients' trouble
		srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	}
	go func() {
		var err error
		if srv.TLSConfig != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	return nil
}
