package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/sources"
	gitsource "github.com/gpuctl/gpuctl/sources/git"
	"github.com/gpuctl/gpuctl/sources/local"
	"github.com/spf13/pflag"
)

// SourceOptions choose where the configuration comes from.
type SourceOptions struct {
	Source   string // dir:PATH or git:URL
	Ref      string
	Path     string
	WorkDir  string
	Interval time.Duration
	// Timeout bounds each exchange with the Git server (--git-timeout).
	Timeout time.Duration
	Auth    gitsource.AuthOptions
	// Webhook secrets (files); a handler is mounted for each one set.
	GitHubSecretFile, GitLabSecretFile, GenericSecretFile string
	// Writes of the API to a Git source: --git-push, --git-push-branch, --git-author-domain.
	Writes daemon.WriteOptions
}

// BindFlags adds the source flags.
func (o *SourceOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Source, "source", "", "where the gpuctl files come from: dir:PATH (watched) or git:URL (https or ssh)")
	fs.StringVar(&o.Ref, "ref", "", "git: branch, refs/tags/NAME or a commit to pin (default: the remote's HEAD)")
	fs.StringVar(&o.Path, "path", "", "git: subdirectory of the repository to render")
	fs.StringVar(&o.WorkDir, "work-dir", "", "git: directory for the clone (default: a temporary directory)")
	fs.DurationVar(&o.Interval, "git-poll-interval", gitsource.DefaultInterval, "git: how often to look for a new commit (0: webhooks only)")
	fs.DurationVar(&o.Timeout, "git-timeout", gitsource.DefaultTimeout, "git: give up an exchange with the Git server (ls-remote, fetch or clone, push) that takes longer")
	fs.StringVar(&o.Auth.TokenFile, "git-token-file", "", "git: file holding an HTTPS access token")
	fs.StringVar(&o.Auth.UsernameFile, "git-username-file", "", "git: file holding the HTTPS basic-auth user")
	fs.StringVar(&o.Auth.PasswordFile, "git-password-file", "", "git: file holding the HTTPS basic-auth password")
	fs.StringVar(&o.Auth.SSHKeyFile, "git-ssh-key-file", "", "git: file holding the SSH private key")
	fs.StringVar(&o.Auth.SSHPassphraseFile, "git-ssh-passphrase-file", "", "git: file holding the SSH key's passphrase")
	fs.StringVar(&o.Auth.KnownHostsFile, "git-known-hosts-file", "", "git: OpenSSH known_hosts file; the host key is checked")
	fs.StringVar(&o.GitHubSecretFile, "webhook-github-secret-file", "", "serve /hooks/github, verifying X-Hub-Signature-256 with this secret")
	fs.StringVar(&o.GitLabSecretFile, "webhook-gitlab-secret-file", "", "serve /hooks/gitlab, verifying X-Gitlab-Token")
	fs.StringVar(&o.GenericSecretFile, "webhook-generic-secret-file", "", "serve /hooks/generic, verifying an HMAC-SHA256 signature")
	fs.BoolVar(&o.Writes.Push, "git-push", false, "git: let the API's writes (POST /api/v1/jobs, ...) commit and push to the followed branch with the source's credentials")
	fs.StringVar(&o.Writes.BranchPrefix, "git-push-branch", "", "git, with --git-push: push each write to a new branch PREFIX<verb>-<job>-<time> and answer with its pull request, instead of the followed branch")
	fs.StringVar(&o.Writes.Domain, "git-author-domain", "gpuctl", "git: commits of the API are authored NAME <NAME@DOMAIN>, NAME being the token's name")
}

// Open creates the source.
func (o *SourceOptions) Open(log *slog.Logger) (sources.Source, error) {
	kind, where, ok := strings.Cut(o.Source, ":")
	switch {
	case !ok || where == "":
		return nil, fmt.Errorf("--source %q: expected dir:PATH or git:URL", o.Source)
	case kind == "dir" && o.Writes.Push:
		return nil, errors.New("--git-push is for a git source: a directory source is written in place")
	case kind == "dir":
		return local.New(local.Options{Root: where, Log: log})
	case o.Writes.BranchPrefix != "" && !o.Writes.Push:
		return nil, errors.New("--git-push-branch needs --git-push")
	case kind == "git" && o.Timeout <= 0:
		return nil, fmt.Errorf("--git-timeout %s: must be positive", o.Timeout)
	case kind == "git":
		opts := gitsource.DefaultOptions(where, o.Ref)
		opts.Path, opts.Dir, opts.Interval, opts.Timeout, opts.Auth, opts.Log = o.Path, o.WorkDir, o.Interval, o.Timeout, o.Auth, log
		src, err := gitsource.New(opts)
		if err != nil {
			return nil, err
		}
		if o.Writes.Push {
			if err := src.CanCommit(); err != nil {
				src.Close()
				return nil, fmt.Errorf("--git-push: %w", err)
			}
		}
		return src, nil
	}
	return nil, fmt.Errorf("--source %q: unknown kind %q (dir or git)", o.Source, kind)
}
