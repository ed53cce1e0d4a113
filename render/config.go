package render

import (
	"path"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is the part of the reconciler's configuration that rendering needs. The CLI reads it
// from .gpuctl.yaml at the root of the rendered tree (or --config); the daemon from its flags.
type Config struct {
	Version string `gpuctl:"version"`
	// Namespaces maps directories to namespaces; the first matching rule wins.
	Namespaces []NamespaceRule `gpuctl:"namespaces"`
	// HostPathPrefixes are the host directories that workdirs may mount (default
	// DefaultHostPathPrefixes).
	HostPathPrefixes []string `gpuctl:"hostPathPrefixes"`
	// WritableHostPathPrefixes are the host directories below which workdirs are mounted
	// read-write; every other workdir is mounted read-only (default
	// DefaultWritableHostPathPrefixes). Each must lie below one of HostPathPrefixes.
	WritableHostPathPrefixes []string `gpuctl:"writableHostPathPrefixes"`
	// SystemNamespace holds the pool registry (default gpuctl-system).
	SystemNamespace string `gpuctl:"systemNamespace"`
	// Tenancy configures what a directory mapped to a namespace may hold (docs/tenancy.md).
	Tenancy Tenancy `gpuctl:"tenancy"`
}

// Tenancy is the admin's policy for files under directories mapped to namespaces (tenant
// directories): everything there is written by a team that may be hostile.
type Tenancy struct {
	// AllowedNamespaces are glob patterns (path.Match) that a mapped namespace must match;
	// empty: any valid name. Reserved namespaces (default, kube-*, the system namespace) are
	// refused whatever the patterns say.
	AllowedNamespaces []string `gpuctl:"allowedNamespaces"`
	// Kinds are the namespaced kinds a tenant directory may hold, as Kind (core group) or
	// Kind.group (e.g. Job.batch); default DefaultTenantKinds. A kind added here also needs
	// its verbs in a ClusterRole bound to the tenant's ServiceAccount (docs/tenancy.md).
	Kinds []string `gpuctl:"kinds"`
	// HighPriorityNamespaces are the tenant namespaces whose pods may use the PriorityClass
	// gpuctl-high; empty: every tenant namespace may.
	HighPriorityNamespaces []string `gpuctl:"highPriorityNamespaces"`
	// Admission renders a ValidatingAdmissionPolicy that holds every pod-creating request in
	// the tenant namespaces to the pod policy (default true).
	Admission *bool `gpuctl:"admission"`
}

// NamespaceRule maps the files below a directory pattern to a namespace. In Path, `*` matches
// one path segment and a trailing `**` any depth (a pattern without it matches below too);
// Namespace may use $1..$9 for the segments the wildcards matched: teams/*/** -> $1.
type NamespaceRule struct {
	Path      string `gpuctl:"path,required"`
	Namespace string `gpuctl:"namespace,required"`
}

// DefaultHostPathPrefixes are the host directories that workdirs may mount by default.
func DefaultHostPathPrefixes() []string {
	return []string{"/datasets", "/models", "/output", "/cache", "/data"}
}

// DefaultWritableHostPathPrefixes are the host directories below which workdirs are mounted
// read-write by default.
func DefaultWritableHostPathPrefixes() []string { return []string{"/output", "/cache"} }

// DefaultTenantKinds are the namespaced kinds a tenant directory may hold by default.
func DefaultTenantKinds() []string {
	return []string{"ConfigMap", "Secret", "Service", "ServiceAccount", "PersistentVolumeClaim", "Pod",
		"Deployment.apps", "StatefulSet.apps", "ReplicaSet.apps", "Job.batch", "CronJob.batch",
		"HorizontalPodAutoscaler.autoscaling", "PodDisruptionBudget.policy",
		"Ingress.networking.k8s.io", "NetworkPolicy.networking.k8s.io"}
}

// ParseConfig reads a configuration file; name is used in diagnostics.
func ParseConfig(name string, data []byte) (*Config, []*Diagnostic) {
	ds := &diagnostics{}
	cfg := &Config{}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		syntaxError(name, err, ds, data)
		return cfg, ds.sorted()
	}
	if len(n.Content) > 0 {
		d := &decoder{file: name, diags: ds, pos: map[string]Pos{}}
		d.decode(n.Content[0], reflect.ValueOf(cfg).Elem(), "")
		if cfg.Version != "" && cfg.Version != Version {
			ds.errorf(name, d.pos["version"], "version", "unsupported version %q", cfg.Version)
		}
		for i, r := range cfg.Namespaces {
			if strings.HasPrefix(r.Path, "/") || strings.Contains("/"+r.Path+"/", "/../") {
				ds.errorf(name, d.pos["namespaces["+strconv.Itoa(i)+"].path"], "namespaces["+strconv.Itoa(i)+"].path",
					"path %q must be relative to the repository root, without ..", r.Path)
			}
		}
		for i, p := range cfg.HostPathPrefixes {
			if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
				ds.errorf(name, d.pos["hostPathPrefixes["+strconv.Itoa(i)+"]"], "hostPathPrefixes["+strconv.Itoa(i)+"]",
					"%q must be a clean absolute directory other than /", p)
			}
		}
	}
	return cfg, ds.sorted()
}

func (c *Config) hostPathPrefixes() []string {
	if c == nil || len(c.HostPathPrefixes) == 0 {
		return DefaultHostPathPrefixes()
	}
	return c.HostPathPrefixes
}

func (c *Config) systemNamespace() string {
	if c == nil || c.SystemNamespace == "" {
		return "gpuctl-system"
	}
	return c.SystemNamespace
}

// NamespaceFor returns the namespace that the rules map a directory to (slash-separated,
// relative to the root), and whether any rule matched.
func (c *Config) NamespaceFor(dir string) (string, bool) {
	if c == nil {
		return "", false
	}
	segs := splitPath(dir)
	for _, r := range c.Namespaces {
		if caps, ok := matchDir(splitPath(r.Path), segs); ok {
			ns := r.Namespace
			for i := len(caps); i >= 1; i-- { // $10 before $1
				ns = strings.ReplaceAll(ns, "$"+strconv.Itoa(i), caps[i-1])
			}
			return ns, true
		}
	}
	return "", false
}

func splitPath(p string) []string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// matchDir matches directory segments against a pattern; the directory may be deeper.
func matchDir(pattern, dir []string) (caps []string, ok bool) {
	for i, p := range pattern {
		if p == "**" {
			return caps, true
		}
		if i >= len(dir) {
			return nil, false
		}
		if m, err := path.Match(p, dir[i]); err != nil || !m {
			return nil, false
		}
		if strings.ContainsAny(p, "*?[") {
			caps = append(caps, dir[i])
		}
	}
	return caps, true
}
