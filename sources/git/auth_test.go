package git

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// requireBasicAuth wraps a handler so that it answers 401 unless the request carries one
// of the user/password pairs.
func requireBasicAuth(pairs map[string]string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			user, pass, ok := r.BasicAuth()
			if want, known := pairs[user]; !ok || !known || pass != want {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestBasicAuth(t *testing.T) {
	const password = "s3cret-pass"
	r := newTestRemote(t, requireBasicAuth(map[string]string{"alice": password}))
	id := r.Commit("one", map[string]string{"a": "1"})
	user := writeSecret(t, "alice\n")

	tests := map[string]struct {
		auth   AuthOptions
		wantOK bool
	}{
		"right password": {AuthOptions{UsernameFile: user, PasswordFile: writeSecret(t, password+"\n")}, true},
		"wrong password": {AuthOptions{UsernameFile: user, PasswordFile: writeSecret(t, "wrong-pass")}, false},
		"no credentials": {AuthOptions{}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newSourceT(t, Options{URL: r.URL, Ref: "main", Auth: tc.auth})
			rev, err := s.Fetch(context.Background())
			if tc.wantOK {
				if err != nil || rev.ID != id {
					t.Fatalf("Fetch = %s, %v; want %s", rev.ID, err, id)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "authentication") {
				t.Fatalf("error = %v, want an authentication failure", err)
			}
			for _, secret := range []string{password, "wrong-pass"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q reveals the password", err)
				}
			}
		})
	}
}

func TestTokenFileIsReadAtEachFetch(t *testing.T) {
	r := newTestRemote(t, requireBasicAuth(map[string]string{TokenUsername: "token-2"}))
	id := r.Commit("one", map[string]string{"a": "1"})
	token := writeSecret(t, "token-1")
	s := newSourceT(t, Options{URL: r.URL, Auth: AuthOptions{TokenFile: token}})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err == nil || strings.Contains(err.Error(), "token-1") {
		t.Fatalf("Fetch with the stale token: error = %v, want a failure not naming it", err)
	}
	if err := os.WriteFile(token, []byte("token-2\n"), 0o600); err != nil { // the Secret rotates
		t.Fatal(err)
	}
	if rev, err := s.Fetch(ctx); err != nil || rev.ID != id {
		t.Fatalf("Fetch with the rotated token = %s, %v; want %s", rev.ID, err, id)
	}
}

func TestCredentialsInURLAreStripped(t *testing.T) {
	r := newTestRemote(t, requireBasicAuth(map[string]string{"alice": "url-pass"}))
	r.Commit("one", map[string]string{"a": "1"})
	withCreds := strings.Replace(r.URL, "http://", "http://alice:url-pass@", 1)
	s := newSourceT(t, Options{URL: withCreds, Ref: "main"})
	if got := s.URL(); strings.Contains(got, "alice") || strings.Contains(got, "url-pass") {
		t.Errorf("URL() = %q reveals credentials", got)
	}
	if _, err := s.Fetch(context.Background()); err != nil {
		t.Fatalf("Fetch with credentials from the URL: %v", err)
	}

	wrong := strings.Replace(r.URL, "http://", "http://alice:bad-url-pass@", 1)
	s = newSourceT(t, Options{URL: wrong, Ref: "main"})
	if _, err := s.Fetch(context.Background()); err == nil || strings.Contains(err.Error(), "bad-url-pass") {
		t.Errorf("error = %v, want a failure that hides the password", err)
	}
	if _, err := New(Options{URL: "http://alice:p%zz@host/repo.git"}); err == nil ||
		strings.Contains(err.Error(), "p%zz") {
		t.Errorf("invalid URL error = %v, want one that does not quote the URL", err)
	}
}

func TestAuthValidate(t *testing.T) {
	dir := t.TempDir()
	key := writeClientKey(t, dir)
	hosts := filepath.Join(dir, "known_hosts")
	os.WriteFile(hosts, nil, 0o644)
	const ssh = "ssh://git@example.com/org/repo.git"
	tests := map[string]struct {
		url     string
		auth    AuthOptions
		wantErr string
	}{
		"ssh without known_hosts":  {ssh, AuthOptions{SSHKeyFile: key}, "KnownHostsFile"},
		"ssh known_hosts missing":  {ssh, AuthOptions{SSHKeyFile: key, KnownHostsFile: filepath.Join(dir, "nope")}, "known_hosts"},
		"ssh without key":          {ssh, AuthOptions{KnownHostsFile: hosts}, "SSHKeyFile"},
		"ssh with known_hosts":     {ssh, AuthOptions{SSHKeyFile: key, KnownHostsFile: hosts}, ""},
		"scp-like, insecure":       {"git@example.com:org/repo.git", AuthOptions{SSHKeyFile: key, InsecureIgnoreHostKey: true}, ""},
		"ssh with a token":         {ssh, AuthOptions{SSHKeyFile: key, KnownHostsFile: hosts, TokenFile: key}, "token"},
		"https with an SSH key":    {"https://example.com/r.git", AuthOptions{SSHKeyFile: key}, "SSH options"},
		"token and password":       {"https://example.com/r.git", AuthOptions{TokenFile: key, UsernameFile: key, PasswordFile: key}, "not both"},
		"password without user":    {"https://example.com/r.git", AuthOptions{PasswordFile: key}, "UsernameFile"},
		"user without password":    {"https://example.com/r.git", AuthOptions{UsernameFile: key}, "PasswordFile"},
		"https with a token":       {"https://example.com/r.git", AuthOptions{TokenFile: key}, ""},
		"file URL with a password": {"file:///srv/r.git", AuthOptions{TokenFile: key}, "not supported"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := New(Options{URL: tc.url, Auth: tc.auth})
			if err == nil {
				s.Close()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("New error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestKnownHostsFileIsChecked(t *testing.T) {
	dir := t.TempDir()
	hostKey, other := newPublicKey(t), newPublicKey(t)
	hosts := filepath.Join(dir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize("git.example.com:2222")}, hostKey)
	if err := os.WriteFile(hosts, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	remote, err := parseRemoteURL("ssh://git@git.example.com:2222/org/repo.git")
	if err != nil {
		t.Fatal(err)
	}
	auth := AuthOptions{SSHKeyFile: writeClientKey(t, dir), KnownHostsFile: hosts}
	method, err := auth.method(remote)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := method.(*gitssh.PublicKeys).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 2222}
	if err := cfg.HostKeyCallback("git.example.com:2222", addr, hostKey); err != nil {
		t.Errorf("the known host key was refused: %v", err)
	}
	if err := cfg.HostKeyCallback("git.example.com:2222", addr, other); err == nil {
		t.Error("a different host key was accepted")
	}
	if err := cfg.HostKeyCallback("evil.example.com:2222", addr, hostKey); err == nil {
		t.Error("an unknown host was accepted")
	}
	if !slices.Contains(cfg.HostKeyAlgorithms, gossh.KeyAlgoED25519) {
		t.Errorf("HostKeyAlgorithms = %v, want the known key's type", cfg.HostKeyAlgorithms)
	}
}

// newPublicKey returns a fresh ed25519 public key.
func newPublicKey(t *testing.T) gossh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
