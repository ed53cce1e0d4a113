package app

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/internal/yamlerr"
	"github.com/gpuctl/gpuctl/usage"
)

// The one place where a read verb (logs, events, ...) chooses its cluster.Model: the cluster
// of the kubeconfig (cluster.Reader with the user's credentials), or the daemon's API
// (remoteModel with a gpuctl token) when a server is named.

// Environment variables and the config file of the API's client.
const (
	envServer = "GPUCTL_SERVER"
	envToken  = "GPUCTL_TOKEN"
	// configHint names the config file in messages.
	configHint = "$XDG_CONFIG_HOME/gpuctl/config (default ~/.config/gpuctl/config)"
)

// readOptions are the flags of a read verb: the kubeconfig's, --reconciler-namespace, and
// --server and --token.
type readOptions struct {
	kube   kube.Options
	server string
	token  string
	// system is the namespace of gpuctl-reconciler that the kubeconfig's reader reads (the
	// daemon's API reads its own).
	system string
	// systemFlag is the flag of system: reconciler-namespace, or namespace for the verbs of
	// the daemon's records (BindRecordFlags); with the kubeconfig's flags, it chooses the
	// kubeconfig.
	systemFlag string
	flags      *pflag.FlagSet
}

// BindFlags adds --kubeconfig, --context, --reconciler-namespace, --server and --token.
func (o *readOptions) BindFlags(fs *pflag.FlagSet) {
	o.kube.BindFlags(fs)
	o.bindServerFlags(fs, "reconciler-namespace", "", "with the kubeconfig: the namespace of gpuctl-reconciler, which holds the pool registry, the applied revision and the drift report")
}

// BindRecordFlags adds the flags of the verbs that read the daemon's own records (status,
// drift): --kubeconfig, --context, -n/--namespace (of gpuctl-reconciler), --server and --token.
func (o *readOptions) BindRecordFlags(fs *pflag.FlagSet) {
	o.kube.BindFlags(fs)
	o.bindRecordFlags(fs)
}

// bindRecordFlags is BindRecordFlags for a command that binds the kubeconfig's flags itself
// (sync) and copies them into kube before Records.
func (o *readOptions) bindRecordFlags(fs *pflag.FlagSet) {
	o.bindServerFlags(fs, "namespace", "n", "with the kubeconfig: the namespace of gpuctl-reconciler")
}

// bindServerFlags adds --server, --token and the flag of gpuctl-reconciler's namespace (name,
// shorthand, usage).
func (o *readOptions) bindServerFlags(fs *pflag.FlagSet, name, short, usage string) {
	o.flags, o.systemFlag = fs, name
	fs.StringVarP(&o.system, name, short, keys.SystemNamespace, usage)
	fs.StringVar(&o.server, "server", "", "ask gpuctl-reconciler's API at this URL instead of the cluster (default: $"+envServer+", else the config file's server)")
	fs.StringVar(&o.token, "token", "", "the API token for --server (default: $"+envToken+", else the config file's token; a flag shows in the process list)")
}

// clientConfig is the config file of the API's client, YAML: the server and token that the
// read verbs ask by default, and the clusters of the fleet (fleetconfig.go) that --clusters
// and --all-clusters read:
//
//	server: https://gpuctl.example.com
//	token: 0123abcd...
//	clusters:
//	  - name: onprem-a100
//	    context: onprem
type clientConfig struct {
	Server   string         `yaml:"server"`
	Token    string         `yaml:"token"`
	Clusters []fleetCluster `yaml:"clusters"`
}

// Model is the read model that the flags, the environment and the config file choose: the
// API of a named server (--server, $GPUCTL_SERVER, the config file's server, unless
// --kubeconfig, --context or --reconciler-namespace is given) with the token of --token, $GPUCTL_TOKEN or the config
// file (whose token goes only to its own server), else the cluster of the kubeconfig. Warnings
// (a config file that others may read) go to warn. Errors exit 2.
func (o *readOptions) Model(warn io.Writer) (cluster.Model, error) {
	m, err := o.model(warn)
	if err != nil {
		return nil, trouble(err)
	}
	return m, nil
}

// Records is where status, sync and drift read the daemon's records, chosen as Model chooses:
// the API of a named server, else the ConfigMaps in the namespace of -n through the
// kubeconfig. Errors exit 2.
func (o *readOptions) Records(warn io.Writer) (records, error) {
	server, token, err := o.source(warn)
	if err != nil {
		return nil, trouble(err)
	}
	if server != "" {
		m, err := newRemoteModel(server, token)
		if err != nil {
			return nil, trouble(err)
		}
		return m, nil
	}
	client, err := kubeClient(&o.kube)
	if err != nil {
		return nil, orServer(err)
	}
	return kubeRecords{client: client, namespace: o.system}, nil
}

// trouble is err with exit code 2, unless it carries its own.
func trouble(err error) error {
	var ee *ExitError
	if !errors.As(err, &ee) {
		err = &ExitError{Code: ExitTrouble, Err: err}
	}
	return err
}

// orServer adds to a missing kubeconfig (kube.ErrNoConfiguration) the other way of a verb
// that takes --server: the daemon's API.
func orServer(err error) error {
	if errors.Is(err, kube.ErrNoConfiguration) {
		return fmt.Errorf("%w; or ask gpuctl-reconciler's API instead: --server URL --token TOKEN, $%s and $%s, or server: and token: in %s",
			err, envServer, envToken, configHint)
	}
	return err
}

func (o *readOptions) model(warn io.Writer) (cluster.Model, error) {
	server, token, err := o.source(warn)
	if err != nil {
		return nil, err
	}
	if server == "" {
		client, dyn, err := kubeClients(&o.kube)
		if err != nil {
			return nil, orServer(err)
		}
		return &cluster.Reader{Client: client, Dynamic: dyn, Namespace: o.system}, nil
	}
	return newRemoteModel(server, token)
}

// source is the server and token that the flags, the environment and the config file name
// (see Model), or no server for the kubeconfig.
func (o *readOptions) source(warn io.Writer) (server, token string, err error) {
	systemFlag := cmp.Or(o.systemFlag, "reconciler-namespace")
	kubeFlags := o.flags != nil && (o.flags.Changed("kubeconfig") || o.flags.Changed("context") || o.flags.Changed(systemFlag))
	if o.server != "" && kubeFlags {
		return "", "", fmt.Errorf("give --server or --kubeconfig/--context/--%s, not both", systemFlag)
	}
	server, token = o.server, o.token
	if server == "" && !kubeFlags {
		server = os.Getenv(envServer)
	}
	if token == "" {
		token = os.Getenv(envToken)
	}
	var cfg clientConfig
	if (server == "" && !kubeFlags) || (server != "" && token == "") {
		path, err := configPath()
		if err == nil {
			cfg, err = readClientConfig(path, warn)
		}
		if err != nil {
			return "", "", err
		}
		if server == "" && !kubeFlags {
			server = cfg.Server
		}
		if token == "" && server != "" && server == cfg.Server {
			token = cfg.Token
		}
	}
	if server != "" && token == "" {
		return "", "", fmt.Errorf("server %s: no token: give --token, $%s, or a token for this server in %s", usage.RedactURL(server), envToken, configHint)
	}
	return server, token, nil
}

// configPath is the config file: $XDG_CONFIG_HOME/gpuctl/config, else ~/.config/gpuctl/config.
func configPath() (string, error) {
	if dir := os.Getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "gpuctl", "config"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("config file: %w", err)
	}
	return filepath.Join(home, ".config", "gpuctl", "config"), nil
}

// readClientConfig reads the config file strictly (errors name file:line); a missing one is
// empty. It warns, as helm does for a kubeconfig, when a file that holds a token is readable by
// its group or by others.
func readClientConfig(path string, warn io.Writer) (clientConfig, error) {
	var cfg clientConfig
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("config file: %w", yamlerr.Errors(path, err, configTypes))
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // it decoded above, so it parses
	if errs := cfg.checkClusters(path, &root); len(errs) > 0 {
		return cfg, fmt.Errorf("config file: %w", errors.Join(errs...))
	}
	inClear := cfg.Token != ""
	for _, c := range cfg.Clusters {
		inClear = inClear || c.Token != ""
	}
	if info, err := os.Stat(path); err == nil && inClear && info.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(warn, "warning: %s holds a token and is readable by others (mode %04o): chmod 600 %s\n",
			path, info.Mode().Perm(), path)
	}
	return cfg, nil
}
