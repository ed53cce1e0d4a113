package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/kube"
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
	flags  *pflag.FlagSet
}

// BindFlags adds --kubeconfig, --context, --reconciler-namespace, --server and --token.
func (o *readOptions) BindFlags(fs *pflag.FlagSet) {
	o.flags = fs
	o.kube.BindFlags(fs)
	fs.StringVar(&o.system, "reconciler-namespace", keys.SystemNamespace, "with the kubeconfig: the namespace of gpuctl-reconciler, which holds the pool registry, the applied revision and the drift report")
	fs.StringVar(&o.server, "server", "", "ask gpuctl-reconciler's API at this URL instead of the cluster (default: $"+envServer+", else the config file's server)")
	fs.StringVar(&o.token, "token", "", "the API token for --server (default: $"+envToken+", else the config file's token; a flag shows in the process list)")
}

// clientConfig is the config file of the API's client, YAML:
//
//	server: https://gpuctl.example.com
//	token: 0123abcd...
type clientConfig struct {
	Server string `json:"server"`
	Token  string `json:"token"`
}

// Model is the read model that the flags, the environment and the config file choose: the
// API of a named server (--server, $GPUCTL_SERVER, the config file's server, unless
// --kubeconfig, --context or --reconciler-namespace is given) with the token of --token, $GPUCTL_TOKEN or the config
// file (whose token goes only to its own server), else the cluster of the kubeconfig. Warnings
// (a config file that others may read) go to warn. Errors exit 2.
func (o *readOptions) Model(warn io.Writer) (cluster.Model, error) {
	m, err := o.model(warn)
	if err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) {
			err = &ExitError{Code: ExitTrouble, Err: err}
		}
		return nil, err
	}
	return m, nil
}

func (o *readOptions) model(warn io.Writer) (cluster.Model, error) {
	kubeFlags := o.flags != nil && (o.flags.Changed("kubeconfig") || o.flags.Changed("context") || o.flags.Changed("reconciler-namespace"))
	if o.server != "" && kubeFlags {
		return nil, errors.New("give --server or --kubeconfig/--context/--reconciler-namespace, not both")
	}
	server, token := o.server, o.token
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
			return nil, err
		}
		if server == "" && !kubeFlags {
			server = cfg.Server
		}
		if token == "" && server != "" && server == cfg.Server {
			token = cfg.Token
		}
	}
	if server == "" {
		client, dyn, err := kubeClients(&o.kube)
		if err != nil {
			return nil, err
		}
		return &cluster.Reader{Client: client, Dynamic: dyn, Namespace: o.system}, nil
	}
	if token == "" {
		return nil, fmt.Errorf("server %s: no token: give --token, $%s, or a token for this server in %s", server, envToken, configHint)
	}
	return newRemoteModel(server, token)
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

// readClientConfig reads the config file; a missing one is empty. It warns, as helm does for a
// kubeconfig, when a file that holds a token is readable by its group or by others.
func readClientConfig(path string, warn io.Writer) (clientConfig, error) {
	var cfg clientConfig
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("config file: %w", err)
	}
	if err := sigsyaml.UnmarshalStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("config file %s: %w", path, err)
	}
	if info, err := os.Stat(path); err == nil && cfg.Token != "" && info.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(warn, "warning: %s holds a token and is readable by others (mode %04o): chmod 600 %s\n",
			path, info.Mode().Perm(), path)
	}
	return cfg, nil
}
