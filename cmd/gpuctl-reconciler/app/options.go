package app

import (
	"errors"
	"fmt"
	"go.yaml.in/yaml/v3"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/render"
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
	Auth     gitsource.AuthOptions
	// Webhook secrets (files); a handler is mounted for each one set.
	GitHubSecretFile, GitLabSecretFile, GenericSecretFile string
}

// BindFlags adds the source flags.
func (o *SourceOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Source, "source", "", "where the gpuctl files come from: dir:PATH (watched) or git:URL (https or ssh)")
	fs.StringVar(&o.Ref, "ref", "", "git: branch, refs/tags/NAME or a commit to pin (default: the remote's HEAD)")
	fs.StringVar(&o.Path, "path", "", "git: subdirectory of the repository to render")
	fs.StringVar(&o.WorkDir, "work-dir", "", "git: directory for the clone (default: a temporary directory)")
	fs.DurationVar(&o.Interval, "git-poll-interval", gitsource.DefaultInterval, "git: how often to look for a new commit (0: webhooks only)")
	fs.StringVar(&o.Auth.TokenFile, "git-token-file", "", "git: file holding an HTTPS access token")
	fs.StringVar(&o.Auth.UsernameFile, "git-username-file", "", "git: file holding the HTTPS basic-auth user")
	fs.StringVar(&o.Auth.PasswordFile, "git-password-file", "", "git: file holding the HTTPS basic-auth password")
	fs.StringVar(&o.Auth.SSHKeyFile, "git-ssh-key-file", "", "git: file holding the SSH private key")
	fs.StringVar(&o.Auth.SSHPassphraseFile, "git-ssh-passphrase-file", "", "git: file holding the SSH key's passphrase")
	fs.StringVar(&o.Auth.KnownHostsFile, "git-known-hosts-file", "", "git: OpenSSH known_hosts file; the host key is checked")
	fs.StringVar(&o.GitHubSecretFile, "webhook-github-secret-file", "", "serve /hooks/github, verifying X-Hub-Signature-256 with this secret")
	fs.StringVar(&o.GitLabSecretFile, "webhook-gitlab-secret-file", "", "serve /hooks/gitlab, verifying X-Gitlab-Token")
	fs.StringVar(&o.GenericSecretFile, "webhook-generic-secret-file", "", "serve /hooks/generic, verifying an HMAC-SHA256 signature")
}

// Open creates the source.
func (o *SourceOptions) Open(log *slog.Logger) (sources.Source, error) {
	kind, where, ok := strings.Cut(o.Source, ":")
	switch {
	case !ok || where == "":
		return nil, fmt.Errorf("--source %q: expected dir:PATH or git:URL", o.Source)
	case kind == "dir":
		return local.New(local.Options{Root: where, Log: log})
	case kind == "git":
		opts := gitsource.DefaultOptions(where, o.Ref)
		opts.Path, opts.Dir, opts.Interval, opts.Auth, opts.Log = o.Path, o.WorkDir, o.Interval, o.Auth, log
		return gitsource.New(opts)
	}
	return nil, fmt.Errorf("--source %q: unknown kind %q (dir or git)", o.Source, kind)
}

// RenderOptions are the rendering settings of the daemon, set by the administrator (never
// taken from the repository that teams commit to).
type RenderOptions struct {
	NamespaceMap             []string
	HostPathPrefixes         []string
	WritableHostPathPrefixes []string
	ConfigFile               string
}

// BindFlags adds the render flags.
func (o *RenderOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.NamespaceMap, "namespace-map", nil, "map a directory pattern to a namespace, e.g. 'teams/*/**=$1' (repeatable)")
	fs.StringSliceVar(&o.HostPathPrefixes, "host-path-prefixes", nil, "host directories that workdirs may mount (default "+strings.Join(render.DefaultHostPathPrefixes(), ",")+")")
	fs.StringSliceVar(&o.WritableHostPathPrefixes, "writable-host-path-prefixes", nil, "host directories below which workdirs are mounted read-write; elsewhere read-only (default "+strings.Join(render.DefaultWritableHostPathPrefixes(), ",")+")")
	fs.StringVar(&o.ConfigFile, "config", "", "a .gpuctl.yaml-style file (namespaces, host paths, tenancy) instead of the flags")
}

// Options builds the renderer's options. With no setting at all, a .gpuctl.yaml in the
// repository is used.
func (o *RenderOptions) Options() (render.Options, error) {
	if o.ConfigFile != "" {
		data, err := os.ReadFile(o.ConfigFile)
		if err != nil {
			return render.Options{}, err
		}
		cfg, diags := render.ParseConfig(o.ConfigFile, data)
		for _, d := range diags {
			if d.Severity == render.SeverityError {
				return render.Options{}, errors.New(d.Error())
			}
		}
		return render.Options{Config: cfg}, nil
	}
	if len(o.NamespaceMap) == 0 && len(o.HostPathPrefixes) == 0 && len(o.WritableHostPathPrefixes) == 0 {
		return render.Options{}, nil
	}
	// The flags are written as the configuration file they stand for and parsed as one, so
	// that they are held to the same rules (reserved namespaces, clean prefixes).
	doc := map[string]any{"version": render.Version}
	var rules []map[string]string
	for _, m := range o.NamespaceMap {
		pattern, ns, ok := strings.Cut(m, "=")
		if !ok || pattern == "" || ns == "" {
			return render.Options{}, fmt.Errorf("--namespace-map %q: expected PATTERN=NAMESPACE", m)
		}
		rules = append(rules, map[string]string{"path": pattern, "namespace": ns})
	}
	if rules != nil {
		doc["namespaces"] = rules
	}
	if o.HostPathPrefixes != nil {
		doc["hostPathPrefixes"] = o.HostPathPrefixes
	}
	if o.WritableHostPathPrefixes != nil {
		doc["writableHostPathPrefixes"] = o.WritableHostPathPrefixes
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return render.Options{}, err
	}
	cfg, diags := render.ParseConfig("flags", data)
	for _, d := range diags {
		if d.Severity == render.SeverityError {
			return render.Options{}, fmt.Errorf("%s (%s): %s", flagOf(d.Field), d.Field, d.Message)
		}
	}
	return render.Options{Config: cfg}, nil
}

// flagOf names the flag that set a configuration field.
func flagOf(field string) string {
	switch {
	case strings.HasPrefix(field, "namespaces"):
		return "--namespace-map"
	case strings.HasPrefix(field, "writableHostPathPrefixes"):
		return "--writable-host-path-prefixes"
	case strings.HasPrefix(field, "hostPathPrefixes"):
		return "--host-path-prefixes"
	}
	return "flags"
}
