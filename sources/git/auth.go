package git

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// TokenUsername is the basic-auth user sent with a token: GitHub (including App
// installation tokens) and GitLab accept it with the token as the password.
const TokenUsername = "x-access-token"

// AuthOptions select how a Source authenticates. Every secret is a file, read again at
// each fetch and poll, so that rotated Kubernetes Secret mounts are picked up without a
// restart. Surrounding whitespace (a trailing newline) is trimmed. Secrets never appear in
// URL(), logs or errors.
type AuthOptions struct {
	// TokenFile holds an access token for HTTPS, sent as basic auth with user
	// TokenUsername (or the content of UsernameFile when set) and the token as password.
	TokenFile string
	// UsernameFile and PasswordFile hold HTTPS basic-auth credentials.
	UsernameFile string
	// PasswordFile holds the HTTPS basic-auth password; it needs UsernameFile.
	PasswordFile string

	// SSHKeyFile holds a PEM private key for ssh:// and user@host:path URLs.
	SSHKeyFile string
	// SSHPassphraseFile holds the passphrase of an encrypted SSHKeyFile.
	SSHPassphraseFile string
	// KnownHostsFile is an OpenSSH known_hosts file; the server's host key is checked
	// against it. Required for SSH unless InsecureIgnoreHostKey is set.
	KnownHostsFile string
	// InsecureIgnoreHostKey accepts any SSH host key. DANGER: anyone who can intercept the
	// connection (DNS, network path) can then serve their own manifests, which the
	// reconciler applies to the cluster. Use only in tests.
	InsecureIgnoreHostKey bool
}

// validate checks that the options fit the URL's protocol, and loads known_hosts once so
// that a bad file is refused at start.
func (a AuthOptions) validate(r remoteURL) error {
	ssh := a.SSHKeyFile != "" || a.SSHPassphraseFile != "" || a.KnownHostsFile != "" ||
		a.InsecureIgnoreHostKey
	basic := a.TokenFile != "" || a.UsernameFile != "" || a.PasswordFile != ""
	switch r.proto {
	case "http", "https":
		if ssh {
			return errors.New("auth: SSH options given for an HTTP URL")
		}
		return a.validateBasic()
	case "ssh":
		if basic {
			return errors.New("auth: token or password options given for an SSH URL")
		}
		return a.validateSSH(r)
	}
	if ssh || basic {
		return fmt.Errorf("auth: credentials are not supported for %s URLs", r.proto)
	}
	return nil
}

func (a AuthOptions) validateBasic() error {
	switch {
	case a.TokenFile != "" && a.PasswordFile != "":
		return errors.New("auth: set TokenFile or PasswordFile, not both")
	case a.PasswordFile != "" && a.UsernameFile == "":
		return errors.New("auth: PasswordFile needs UsernameFile")
	case a.UsernameFile != "" && a.PasswordFile == "" && a.TokenFile == "":
		return errors.New("auth: UsernameFile needs PasswordFile or TokenFile")
	}
	return nil
}

func (a AuthOptions) validateSSH(r remoteURL) error {
	if a.SSHKeyFile == "" {
		return errors.New("auth: an SSH URL needs SSHKeyFile")
	}
	if a.InsecureIgnoreHostKey {
		return nil
	}
	if a.KnownHostsFile == "" {
		return errors.New("auth: an SSH URL needs KnownHostsFile to check the server's " +
			"host key (or InsecureIgnoreHostKey, which lets an attacker serve manifests)")
	}
	_, err := a.hostKeyCheck(r)
	return err
}

// method builds go-git's auth method, reading the secret files now.
func (a AuthOptions) method(r remoteURL) (transport.AuthMethod, error) {
	switch r.proto {
	case "http", "https":
		return a.basicAuth(r)
	case "ssh":
		return a.sshAuth(r)
	}
	return nil, nil
}

func (a AuthOptions) basicAuth(r remoteURL) (transport.AuthMethod, error) {
	var user, pass string
	var err error
	switch {
	case a.TokenFile != "":
		user = TokenUsername
		if pass, err = readSecret("token", a.TokenFile); err != nil {
			return nil, err
		}
	case a.PasswordFile != "":
		if pass, err = readSecret("password", a.PasswordFile); err != nil {
			return nil, err
		}
	case r.urlUser != "" || r.urlPass != "":
		return &githttp.BasicAuth{Username: r.urlUser, Password: r.urlPass}, nil
	default:
		return nil, nil
	}
	if a.UsernameFile != "" {
		if user, err = readSecret("username", a.UsernameFile); err != nil {
			return nil, err
		}
	}
	return &githttp.BasicAuth{Username: user, Password: pass}, nil
}

func (a AuthOptions) sshAuth(r remoteURL) (transport.AuthMethod, error) {
	key, err := os.ReadFile(a.SSHKeyFile)
	if err != nil {
		return nil, fmt.Errorf("auth: read SSH key file: %w", err)
	}
	var passphrase string
	if a.SSHPassphraseFile != "" {
		if passphrase, err = readSecret("SSH passphrase", a.SSHPassphraseFile); err != nil {
			return nil, err
		}
	}
	keys, err := gitssh.NewPublicKeys(r.user, key, passphrase)
	if err != nil {
		return nil, fmt.Errorf("auth: SSH key file %s: %w", a.SSHKeyFile, err)
	}
	if keys.HostKeyCallbackHelper, err = a.hostKeyCheck(r); err != nil {
		return nil, err
	}
	return keys, nil
}

// hostKeyCheck loads KnownHostsFile into a callback that checks the server's host key, and
// asks for the key types known for the host so that the server offers one of them.
func (a AuthOptions) hostKeyCheck(r remoteURL) (gitssh.HostKeyCallbackHelper, error) {
	if a.InsecureIgnoreHostKey {
		return gitssh.HostKeyCallbackHelper{HostKeyCallback: gossh.InsecureIgnoreHostKey()}, nil
	}
	if _, err := os.Stat(a.KnownHostsFile); err != nil {
		return gitssh.HostKeyCallbackHelper{}, fmt.Errorf("auth: known_hosts: %w", err)
	}
	db, err := gitssh.NewKnownHostsDb(a.KnownHostsFile)
	if err != nil {
		return gitssh.HostKeyCallbackHelper{}, fmt.Errorf("auth: known_hosts %s: %w",
			a.KnownHostsFile, err)
	}
	hostPort := net.JoinHostPort(strings.Trim(r.host, "[]"), strconv.Itoa(r.port))
	return gitssh.HostKeyCallbackHelper{
		HostKeyCallback:   db.HostKeyCallback(),
		HostKeyAlgorithms: db.HostKeyAlgorithms(hostPort),
	}, nil
}

// readSecret reads a secret file; errors name the file, never its content.
func readSecret(what, file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("auth: read %s file: %w", what, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("auth: %s file %s is empty", what, file)
	}
	return s, nil
}

// configured reports whether any credential is set, in the options or the URL.
func (a AuthOptions) configured(r remoteURL) bool {
	return a.TokenFile != "" || a.PasswordFile != "" || a.SSHKeyFile != "" ||
		r.urlUser != "" || r.urlPass != ""
}
