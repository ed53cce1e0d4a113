package options

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/secrets/sops"
)

// Render are the render settings of an administrator: a configuration file, or flags that
// stand for one. With none of them the renderer uses the .gpuctl.yaml found from the rendered
// directory upwards (render.Options.Config nil).
type Render struct {
	// ConfigFile replaces the .gpuctl.yaml lookup.
	ConfigFile string
	// NamespaceMap are PATTERN=NAMESPACE rules (the file's namespaces:).
	NamespaceMap []string
	// HostPathPrefixes are the host directories that workdirs may mount (the file's hostPathPrefixes:).
	HostPathPrefixes []string
	// WritableHostPathPrefixes are the host directories mounted read-write (the file's
	// writableHostPathPrefixes:).
	WritableHostPathPrefixes []string
	// Queueing is how the teams' quotas hold their workloads, render.QueueingResourceQuota or
	// render.QueueingKueue (the file's queueing:).
	Queueing string
	// AgeKeys is a directory of age identity files that decrypt the SOPS-encrypted files
	// (render.Decryptor): "admin" for the admin's files, one named after each team's namespace
	// for its files. "" (and no $GPUCTL_AGE_KEYS): none, such files render sealed.
	AgeKeys string
	// Cluster is the cluster the render is for (render.Options.Cluster): the shared files and
	// clusters/<Cluster>/. BindClusterFlag binds it as --cluster; the daemon sets it from its
	// own --cluster, which names the cluster in its notifications too.
	Cluster string
}

// The names of the render flags.
const (
	flagConfig   = "config"
	flagNSMap    = "namespace-map"
	flagHostPath = "host-path-prefixes"
	flagWritable = "writable-host-path-prefixes"
	flagQueueing = "queueing"
	flagAgeKeys  = "age-keys"
	flagCluster  = "cluster"
)

// EnvAgeKeys names the directory of age keys when --age-keys is not given.
const EnvAgeKeys = "GPUCTL_AGE_KEYS"

// BindFlags adds the render flags.
func (o *Render) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, flagConfig, "", "a .gpuctl.yaml-style file (namespaces, host paths, tenancy) instead of the .gpuctl.yaml found from the rendered directory upwards")
	fs.StringArrayVar(&o.NamespaceMap, flagNSMap, nil, "map a directory pattern to a namespace, e.g. 'teams/*/**=$1' (repeatable; instead of a .gpuctl.yaml)")
	fs.StringSliceVar(&o.HostPathPrefixes, flagHostPath, nil, "host directories that workdirs may mount (default "+strings.Join(render.DefaultHostPathPrefixes(), ",")+")")
	fs.StringSliceVar(&o.WritableHostPathPrefixes, flagWritable, nil, "host directories below which workdirs are mounted read-write; elsewhere read-only (default "+strings.Join(render.DefaultWritableHostPathPrefixes(), ",")+")")
	fs.StringVar(&o.Queueing, flagQueueing, "", "how team quotas hold workloads: "+render.QueueingResourceQuota+" (ResourceQuotas, the default) or "+render.QueueingKueue+" (Kueue queues with borrowing between teams)")
	fs.StringVar(&o.AgeKeys, flagAgeKeys, "", "a directory of age keys that decrypt SOPS-encrypted files: 'admin' for the admin's files, one file per team namespace for the team's (default $"+EnvAgeKeys+"; without: encrypted files are not decrypted, and left as they are in the cluster)")
}

// BindClusterFlag adds --cluster (not among BindFlags: the daemon has its own --cluster).
func (o *Render) BindClusterFlag(fs *pflag.FlagSet) {
	o.BindClusterFlagUsage(fs, "render for this cluster: the shared files and those of clusters/NAME/ (docs/fleet.md); without it, no file of clusters/ is read")
}

// BindClusterFlagUsage is BindClusterFlag with the usage of a command that does more with the
// cluster than render for it (the write verbs put a new file in its directory).
func (o *Render) BindClusterFlagUsage(fs *pflag.FlagSet, usage string) {
	fs.StringVar(&o.Cluster, flagCluster, "", usage)
}

// Given reports whether any render setting was given.
func (o *Render) Given() bool { return o.ConfigFile != "" || o.flagsGiven() }

// flagsGiven reports whether a flag that stands for a configuration file was given.
func (o *Render) flagsGiven() bool {
	return len(o.NamespaceMap) > 0 || len(o.HostPathPrefixes) > 0 || len(o.WritableHostPathPrefixes) > 0 || o.Queueing != ""
}

// Renderer builds a renderer from Options.
func (o *Render) Renderer() (*render.Renderer, error) {
	opts, err := o.Options()
	if err != nil {
		return nil, err
	}
	return render.New(opts), nil
}

// Options builds the renderer's options: with --config, its file as the configuration and its
// directory as the root (the daemon replaces the root with each revision's directory, see
// daemon.Options.Render); with the other flags, the configuration they stand for (the root is
// the rendered directory); with neither, none (the renderer looks for a .gpuctl.yaml).
func (o *Render) Options() (render.Options, error) {
	opts, err := o.configOptions()
	if err != nil {
		return render.Options{}, err
	}
	opts.Cluster = o.Cluster
	opts.Decryptor, err = o.decryptor()
	return opts, err
}

// configOptions are Options without the decryptor.
func (o *Render) configOptions() (render.Options, error) {
	switch {
	case o.ConfigFile != "" && o.flagsGiven():
		return render.Options{}, fmt.Errorf("--%s cannot be combined with --%s, --%s, --%s or --%s: set them in the file",
			flagConfig, flagNSMap, flagHostPath, flagWritable, flagQueueing)
	case o.ConfigFile != "":
		data, err := os.ReadFile(o.ConfigFile)
		if err != nil {
			return render.Options{}, err
		}
		cfg, err := parseConfig(o.ConfigFile, data, func(d *render.Diagnostic) error { return errors.New(d.Error()) })
		if err != nil {
			return render.Options{}, err
		}
		return render.Options{Config: cfg, Root: filepath.Dir(o.ConfigFile)}, nil
	case o.flagsGiven():
		cfg, err := o.flagConfig()
		return render.Options{Config: cfg}, err
	}
	return render.Options{}, nil
}

// flagConfig writes the flags as the configuration file they stand for and parses it as one,
// so that they are held to the same rules (reserved namespaces, clean prefixes).
func (o *Render) flagConfig() (*render.Config, error) {
	doc := map[string]any{"version": render.Version}
	var rules []map[string]string
	for _, m := range o.NamespaceMap {
		pattern, ns, ok := strings.Cut(m, "=")
		if !ok || pattern == "" || ns == "" {
			return nil, fmt.Errorf("--%s %q: expected PATTERN=NAMESPACE", flagNSMap, m)
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
	if o.Queueing != "" {
		doc["queueing"] = o.Queueing
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return parseConfig("flags", data, func(d *render.Diagnostic) error {
		return fmt.Errorf("%s (%s): %s", flagOf(d.Field), d.Field, d.Message)
	})
}

// parseConfig parses a configuration; its errors, each described by describe, are joined.
func parseConfig(name string, data []byte, describe func(*render.Diagnostic) error) (*render.Config, error) {
	cfg, diags := render.ParseConfig(name, data)
	var errs []error
	for _, d := range diags {
		if d.Severity == render.SeverityError {
			errs = append(errs, describe(d))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

// flagOf names the flag that set a configuration field.
func flagOf(field string) string {
	switch {
	case strings.HasPrefix(field, "namespaces"):
		return "--" + flagNSMap
	case strings.HasPrefix(field, "writableHostPathPrefixes"):
		return "--" + flagWritable
	case strings.HasPrefix(field, "hostPathPrefixes"):
		return "--" + flagHostPath
	case field == "queueing":
		return "--" + flagQueueing
	}
	return "flags"
}

// decryptor reads the age keys of --age-keys (or $GPUCTL_AGE_KEYS): nil without either.
func (o *Render) decryptor() (*render.Decryptor, error) {
	dir := o.AgeKeys
	if dir == "" {
		dir = os.Getenv(EnvAgeKeys)
	}
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagAgeKeys, err)
	}
	var admin *sops.Keyring
	teams := map[string]*sops.Keyring{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") { // a mounted Secret's ..data links
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flagAgeKeys, err)
		}
		ids, err := sops.ParseIdentities(data)
		if err != nil {
			return nil, fmt.Errorf("--%s: %s: %w", flagAgeKeys, name, err) // its errors quote no key
		}
		ring := sops.NewKeyring(ids)
		if name == "admin" {
			admin = ring
		} else {
			teams[name] = ring
		}
	}
	return render.NewDecryptor(admin, teams), nil
}
