package render

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/gpuctl/gpuctl/internal/keys"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
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
	// SystemNamespace holds the pool registry (default keys.SystemNamespace).
	SystemNamespace string `gpuctl:"systemNamespace"`
	// Tenancy configures what a directory mapped to a namespace may hold (docs/tenancy.md).
	Tenancy Tenancy `gpuctl:"tenancy"`
	// Queueing is how the teams' quotas hold their workloads: QueueingResourceQuota (the
	// default, "" too) or QueueingKueue.
	Queueing string `gpuctl:"queueing"`
	// MultiNode is how multi-node training (node_count > 1) is rendered: MultiNodeJob (the
	// default, "" too) or MultiNodeJobSet (docs/format.md §2.2).
	MultiNode string `gpuctl:"multiNode"`
	// MultiKueue makes one cluster of the repository a MultiKueue manager that runs its teams'
	// jobs in the worker clusters (multikueue.go, docs/fleet.md); needs QueueingKueue.
	MultiKueue MultiKueue `gpuctl:"multiKueue"`
	// Teams maps people (their Git user.email) to their team, the namespace whose directory
	// `gpuctl create` writes their files to (TeamOf, TeamDir). Rendering does not use it.
	Teams []TeamMember `gpuctl:"teams"`
	// DefaultNamespaceDir is the directory (slash-separated, relative to the root; no namespace
	// rule may map it) where an admin's write of the API puts a file whose workloads land in
	// namespace default; unset, the directory named after the kind of its first workload
	// (DefaultDir). Rendering does not use it.
	DefaultNamespaceDir string `gpuctl:"defaultNamespaceDir"`
	// Secrets are the age recipients that `gpuctl secret create` encrypts a team's Secrets
	// for (docs/secrets.md). Rendering does not use them: it decrypts with private keys.
	Secrets SecretRecipients `gpuctl:"secrets"`
}

// TeamMember is one entry of Config.Teams: a person's Git user.email and their team.
type TeamMember struct {
	Email string `gpuctl:",key"`
	Team  string `gpuctl:",value"`
}

// The values of Config.Queueing.
const (
	// QueueingResourceQuota gives each team of a quota file a ResourceQuota: a pod that does
	// not fit is refused.
	QueueingResourceQuota = "resourcequota"
	// QueueingKueue gives each team a Kueue ClusterQueue and LocalQueue: a workload that does
	// not fit waits in the queue, and idle quota is lent within the cohort (docs/format.md §9).
	QueueingKueue = "kueue"
)

// Kueue reports whether the configuration chooses queueing on Kueue.
func (c *Config) Kueue() bool { return c != nil && c.Queueing == QueueingKueue }

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
	// Controllers are the user names, besides kube-controller-manager's and Kueue's, whose
	// requests in a tenant namespace may set or change ownerReferences and remove a pod's
	// scheduling gates (rules owner-references, scheduling-gates): the operators of the kinds
	// added to Kinds, e.g. system:serviceaccount:kubeflow:training-operator.
	Controllers []string `gpuctl:"controllers"`
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
		switch cfg.Queueing {
		case "", QueueingResourceQuota, QueueingKueue:
		default:
			diag := ds.errorf(name, d.pos["queueing"], "queueing", "unknown queueing %q", cfg.Queueing)
			diag.Hint = "expected " + QueueingResourceQuota + " (the default) or " + QueueingKueue
			if best := suggest(cfg.Queueing, []string{QueueingResourceQuota, QueueingKueue}); best != "" {
				diag.Hint = fmt.Sprintf("did you mean %q?", best)
			}
		}
		if cfg.MultiNode != "" && !slices.Contains(multiNodeValues, cfg.MultiNode) {
			diag := ds.errorf(name, d.pos["multiNode"], "multiNode", "unknown multiNode %q", cfg.MultiNode)
			diag.Hint = "expected " + MultiNodeJob + " (the default) or " + MultiNodeJobSet
			if best := suggest(cfg.MultiNode, multiNodeValues); best != "" {
				diag.Hint = fmt.Sprintf("did you mean %q?", best)
			}
		}
		cfg.checkTenancy(name, d.pos, ds)
		cfg.checkTeams(name, d.pos, ds)
		cfg.checkDefaultDir(name, d.pos, ds)
		cfg.checkSecrets(name, d.pos, ds)
		cfg.checkMultiKueue(name, d.pos, ds)
	}
	return cfg, ds.sorted()
}

// checkTenancy validates the settings that hold tenant directories: writable prefixes,
// literal namespaces of the mapping, tenancy.allowedNamespaces, kinds and high-priority
// namespaces.
func (c *Config) checkTenancy(name string, pos map[string]Pos, ds *diagnostics) {
	item := func(field string, i int) (Pos, string) {
		f := field + "[" + strconv.Itoa(i) + "]"
		return pos[f], f
	}
	for i, p := range c.WritableHostPathPrefixes {
		switch at, f := item("writableHostPathPrefixes", i); {
		case !path.IsAbs(p) || path.Clean(p) != p || p == "/":
			ds.errorf(name, at, f, "%q must be a clean absolute directory other than /", p)
		case !underAny(p, c.hostPathPrefixes()):
			ds.errorf(name, at, f, "%q is not below any of hostPathPrefixes (%s)", p, strings.Join(c.hostPathPrefixes(), ", "))
		}
	}
	for i, p := range c.Tenancy.AllowedNamespaces {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			at, f := item("tenancy.allowedNamespaces", i)
			ds.errorf(name, at, f, "%q is not a valid pattern", p)
		}
	}
	for i, r := range c.Namespaces {
		if strings.Contains(r.Namespace, "$") {
			continue // known only for each directory
		}
		if rule, problem := c.namespaceProblem(r.Namespace); problem != "" {
			f := "namespaces[" + strconv.Itoa(i) + "].namespace"
			msg := fmt.Sprintf("namespace %q is %s", r.Namespace, problem)
			if rule != "" {
				msg = tenancyProblem(rule, "%s", msg)
			}
			ds.errorf(name, pos[f], f, "%s", msg)
		}
	}
	for i, k := range c.Tenancy.Kinds {
		at, f := item("tenancy.kinds", i)
		kind, group, _ := strings.Cut(k, ".")
		switch {
		case !kindPattern.MatchString(kind) || !unicode.IsUpper(rune(kind[0])) || (group != "" && len(validation.IsDNS1123Subdomain(group)) > 0):
			ds.errorf(name, at, f, "%q is not a kind: write Kind for the core group or Kind.group, e.g. Job.batch", k)
		case clusterScopedKinds[k]:
			ds.errorf(name, at, f, "%s is cluster-scoped; a tenant directory may hold namespaced kinds only", k)
		case group == keys.KueueGroup:
			ds.errorf(name, at, f, "%s is Kueue's, and Kueue's objects are the admin's: gpuctl renders each team's queues from the quota files (queueing kueue); a tenant directory may hold none", k)
		}
	}
	for i, u := range c.Tenancy.Controllers {
		at, f := item("tenancy.controllers", i)
		switch {
		case !rbacNamePattern.MatchString(u):
			ds.errorf(name, at, f, "%q is not a user name: letters, digits and :._@+- only, e.g. system:serviceaccount:kubeflow:training-operator", u)
		case strings.HasSuffix(u, ":"+keys.TenantServiceAccount):
			ds.errorf(name, at, f, "%s applies a tenant's files; it is no controller", u)
		}
	}
	for i, ns := range c.Tenancy.HighPriorityNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			at, f := item("tenancy.highPriorityNamespaces", i)
			ds.errorf(name, at, f, "%q is not a valid namespace name: %s", ns, errs[0])
		}
	}
}

// ReservedNamespace reports whether a namespace belongs to the cluster or to gpuctl: default,
// kube-*, the system namespace. No tenant directory maps to it and no quota owns it.
func (c *Config) ReservedNamespace(ns string) bool {
	return ns == keys.DefaultNamespace || strings.HasPrefix(ns, "kube-") || ns == keys.SystemNamespace || ns == c.systemNamespace()
}

// namespaceProblem says why a namespace cannot be a tenant's ("" if it can), and the
// tenancy rule that refuses it ("" for a name that is not valid at all).
func (c *Config) namespaceProblem(ns string) (rule, problem string) {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", "not a valid namespace name: " + errs[0]
	}
	if c.ReservedNamespace(ns) {
		return ruleReservedNamespace, fmt.Sprintf("reserved: default, kube-* and the system namespace %s never hold a tenant's objects", c.systemNamespace())
	}
	if c == nil || len(c.Tenancy.AllowedNamespaces) == 0 {
		return "", ""
	}
	for _, p := range c.Tenancy.AllowedNamespaces {
		if ok, _ := path.Match(p, ns); ok {
			return "", ""
		}
	}
	return ruleAllowedNamespaces, "not matched by tenancy.allowedNamespaces (" + strings.Join(c.Tenancy.AllowedNamespaces, ", ") + ")"
}

// PodPolicy returns the pod policy of a tenant namespace under this configuration. Its
// ServiceAccounts are nil: render fills them with those the tenant declares.
func (c *Config) PodPolicy(namespace string) PodPolicy {
	return PodPolicy{
		Namespace:                namespace,
		HostPathPrefixes:         slices.Clone(c.hostPathPrefixes()),
		WritableHostPathPrefixes: slices.Clone(c.writableHostPathPrefixes()),
		AllowHighPriority:        c.highPriorityAllowed(namespace),
	}
}

func (c *Config) highPriorityAllowed(ns string) bool {
	return c == nil || len(c.Tenancy.HighPriorityNamespaces) == 0 || slices.Contains(c.Tenancy.HighPriorityNamespaces, ns)
}

// writableHostPathPrefixes are the configured writable prefixes; unset means the defaults,
// an empty list none.
func (c *Config) writableHostPathPrefixes() []string {
	if c == nil || c.WritableHostPathPrefixes == nil {
		return DefaultWritableHostPathPrefixes()
	}
	return c.WritableHostPathPrefixes
}

// tenantKinds is the set of kinds (Kind or Kind.group) that tenant directories may hold.
func (c *Config) tenantKinds() map[string]bool {
	list := DefaultTenantKinds()
	if c != nil && len(c.Tenancy.Kinds) > 0 {
		list = c.Tenancy.Kinds
	}
	set := make(map[string]bool, len(list))
	for _, k := range list {
		set[k] = true
	}
	return set
}

func (c *Config) hostPathPrefixes() []string {
	if c == nil || len(c.HostPathPrefixes) == 0 {
		return DefaultHostPathPrefixes()
	}
	return c.HostPathPrefixes
}

func (c *Config) systemNamespace() string {
	if c == nil || c.SystemNamespace == "" {
		return keys.SystemNamespace
	}
	return c.SystemNamespace
}

// NamespaceFor returns the namespace that the rules map a directory to (slash-separated,
// relative to the root), and whether any rule matched.
func (c *Config) NamespaceFor(dir string) (string, bool) {
	ns, _, ok := c.namespaceRule(dir)
	return ns, ok
}

// namespaceRule is NamespaceFor that also returns the index of the matching rule.
func (c *Config) namespaceRule(dir string) (string, int, bool) {
	if c == nil {
		return "", -1, false
	}
	segs := splitPath(dir)
	for i, r := range c.Namespaces {
		if caps, ok := matchDir(splitPath(r.Path), segs); ok {
			ns := r.Namespace
			for j := len(caps); j >= 1; j-- { // $10 before $1
				ns = strings.ReplaceAll(ns, "$"+strconv.Itoa(j), caps[j-1])
			}
			return ns, i, true
		}
	}
	return "", -1, false
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
