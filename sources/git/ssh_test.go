package git

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// newClientKey writes a fresh unencrypted ed25519 private key into dir and returns its
// path and public key.
func newClientKey(t *testing.T, dir string) (string, gossh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return path, sshPub
}

// writeClientKey writes a fresh private key into dir and returns its path.
func writeClientKey(t *testing.T, dir string) string {
	t.Helper()
	path, _ := newClientKey(t, dir)
	return path
}

// sshServer serves `git-upload-pack <root>/<path>` over SSH to one authorised client key.
type sshServer struct {
	t       *testing.T
	root    string
	client  gossh.PublicKey
	hostKey gossh.PublicKey
	ln      net.Listener
}

// newSSHServer listens on 127.0.0.1 with a fresh host key.
func newSSHServer(t *testing.T, root string, client gossh.PublicKey) *sshServer {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	srv := &sshServer{t: t, root: root, client: client, hostKey: signer.PublicKey()}
	cfg := &gossh.ServerConfig{PublicKeyCallback: srv.authorise}
	cfg.AddHostKey(signer)
	if srv.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.ln.Close() })
	go srv.serve(cfg)
	return srv
}

func (srv *sshServer) authorise(_ gossh.ConnMetadata, key gossh.PublicKey) (*gossh.Permissions, error) {
	if bytes.Equal(key.Marshal(), srv.client.Marshal()) {
		return nil, nil
	}
	return nil, errors.New("key not authorised")
}

func (srv *sshServer) serve(cfg *gossh.ServerConfig) {
	for {
		conn, err := srv.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			_, chans, reqs, err := gossh.NewServerConn(conn, cfg)
			if err != nil {
				conn.Close()
				return
			}
			go gossh.DiscardRequests(reqs)
			for nc := range chans {
				if nc.ChannelType() != "session" {
					nc.Reject(gossh.UnknownChannelType, "session only")
					continue
				}
				ch, chReqs, err := nc.Accept()
				if err == nil {
					go srv.session(ch, chReqs)
				}
			}
		}()
	}
}

// session runs the exec request of one channel: git-upload-pack '/repo.git'.
func (srv *sshServer) session(ch gossh.Channel, reqs <-chan *gossh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			req.Reply(req.Type == "env", nil)
			continue
		}
		var payload struct{ Command string }
		gossh.Unmarshal(req.Payload, &payload)
		prog, arg, _ := strings.Cut(payload.Command, " ")
		if prog != "git-upload-pack" {
			req.Reply(false, nil)
			return
		}
		req.Reply(true, nil)
		status := srv.run(ch, filepath.Join(srv.root, strings.Trim(arg, "'")))
		ch.SendRequest("exit-status", false, gossh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

// run runs git-upload-pack on dir with the channel as its stdin and stdout.
func (srv *sshServer) run(ch gossh.Channel, dir string) uint32 {
	cmd := exec.Command("git", "upload-pack", dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "HOME=" + srv.root}
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(ch.Stderr(), err)
		return 1
	}
	go func() { io.Copy(stdin, ch); stdin.Close() }()
	if err := cmd.Wait(); err != nil {
		return 1
	}
	return 0
}

// knownHosts writes a known_hosts file that lists key for the server's address.
func (srv *sshServer) knownHosts(t *testing.T, key gossh.PublicKey) string {
	t.Helper()
	line := knownhosts.Line([]string{knownhosts.Normalize(srv.ln.Addr().String())}, key)
	path := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSSHChecksHostKey(t *testing.T) {
	r := newTestRemote(t, nil)
	id := r.Commit("over ssh", map[string]string{"a": "1"})
	keyFile, clientPub := newClientKey(t, t.TempDir())
	srv := newSSHServer(t, r.Root, clientPub)
	url := "ssh://git@" + srv.ln.Addr().String() + "/repo.git"

	tests := map[string]struct {
		auth    AuthOptions
		wantErr string
	}{
		"known host key": {AuthOptions{SSHKeyFile: keyFile, KnownHostsFile: srv.knownHosts(t, srv.hostKey)}, ""},
		"other host key": {AuthOptions{SSHKeyFile: keyFile, KnownHostsFile: srv.knownHosts(t, newPublicKey(t))}, "key"},
		"unauthorised client": {AuthOptions{SSHKeyFile: writeClientKey(t, t.TempDir()),
			KnownHostsFile: srv.knownHosts(t, srv.hostKey)}, "unable to authenticate"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newSourceT(t, Options{URL: url, Ref: "main", Auth: tc.auth})
			rev, err := s.Fetch(context.Background())
			if tc.wantErr == "" {
				if err != nil || rev.ID != id {
					t.Fatalf("Fetch = %s, %v; want %s", rev.ID, err, id)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Fetch error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}
