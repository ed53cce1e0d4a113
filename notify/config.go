package notify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/yamlerr"
	"github.com/gpuctl/gpuctl/render"
	"go.yaml.in/yaml/v3"
)

// ProviderType is the kind of a provider: the shape of what is posted to its URL.
type ProviderType string

// The provider types.
const (
	// ProviderSlack posts to a Slack incoming webhook (slack.go).
	ProviderSlack ProviderType = "slack"
	// ProviderTeams posts an Adaptive Card to a Microsoft Teams Workflows webhook (teams.go).
	ProviderTeams ProviderType = "teams"
	// ProviderWebhook posts the Event as JSON, signed with HMAC-SHA256 (webhook.go).
	ProviderWebhook ProviderType = "webhook"
)

// Config is an administrator's gpuctl-alerts.yaml: where alerts go and which go where.
type Config struct {
	// File is where the configuration was read from.
	File      string
	Providers []Provider
	Routes    []Route
	// RepeatInterval: an open condition is sent again after this long; 0: never.
	RepeatInterval time.Duration
}

// Provider is a destination of alerts. Its URL and secret are secrets: nothing prints them;
// logs and errors name the provider by Name.
type Provider struct {
	Name string
	Type ProviderType
	// URL is the webhook's URL: url, or the content of urlFile.
	URL string
	// Secret is the HMAC-SHA256 key of a webhook (the content of secretFile); nil: unsigned.
	Secret []byte
}

// Route sends the Events that match it to a provider. Every route that matches an Event
// gets it (not the first only).
type Route struct {
	Provider string
	// Reasons, Severities and Teams select Events; an empty list selects all. An Event of
	// the whole cluster (Namespace "") matches only routes without Teams.
	Reasons    []Reason
	Severities []Severity
	Teams      []string
}

// Matches says whether the route selects e.
func (r Route) Matches(e Event) bool {
	return (len(r.Reasons) == 0 || slices.Contains(r.Reasons, e.Reason)) &&
		(len(r.Severities) == 0 || slices.Contains(r.Severities, e.Severity)) &&
		(len(r.Teams) == 0 || e.Namespace != "" && slices.Contains(r.Teams, e.Namespace))
}

// ConfigError is a problem in an alerts file, with its position (file:line: message).
type ConfigError = yamlerr.Error

// fileConfig is the file as written.
type fileConfig struct {
	Version        string         `yaml:"version"`
	Providers      []fileProvider `yaml:"providers"`
	Routes         []fileRoute    `yaml:"routes"`
	RepeatInterval string         `yaml:"repeatInterval"`
}

type fileProvider struct {
	Name       string `yaml:"name"`
	Type       string `yaml:"type"`
	URL        string `yaml:"url"`
	URLFile    string `yaml:"urlFile"`
	SecretFile string `yaml:"secretFile"`
}

type fileRoute struct {
	Provider   string     `yaml:"provider"`
	Reasons    []Reason   `yaml:"reasons"`
	Severities []Severity `yaml:"severities"`
	Teams      []string   `yaml:"teams"`
}

var (
	allReasons = []Reason{SyncFailed, SyncRecovered, Drift, DriftResolved, ShadowWorkload, JobFailed,
		QuotaReached, QuotaFreed, IdleGPU}
	allSeverities = []Severity{SeverityInfo, SeverityWarning, SeverityError}
	providerName  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	yamlTypes     = map[string]string{"notify.fileConfig": "the alerts file", "notify.fileProvider": "a provider", "notify.fileRoute": "a route"}
)

// LoadConfig reads and checks an alerts file (ParseConfig), with the files it names.
func LoadConfig(file string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParseConfig(file, data)
}

// ParseConfig reads an alerts file strictly: unknown fields, wrong types, an unknown version,
// provider type, reason or severity, a route to no provider, a missing or unreadable URL are
// errors, each a *ConfigError with the file and line, joined. urlFile and secretFile are read
// now (relative to the working directory); their content never appears in an error.
func ParseConfig(file string, data []byte) (*Config, error) {
	var fc fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlerr.Errors(file, err, yamlTypes)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // it decoded above, so it parses
	pos := map[string]int{"": 1}
	if len(root.Content) > 0 {
		nodeLines(pos, "", root.Content[0])
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ConfigError{File: file, Line: pos[key], Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case fc.Version == "":
		bad("", "version: required (version: %s)", render.Version)
	case fc.Version != render.Version:
		bad("version", "version: unsupported version %q (want %s)", fc.Version, render.Version)
	}
	cfg := &Config{File: file}
	if fc.RepeatInterval != "" {
		d, err := time.ParseDuration(fc.RepeatInterval)
		if err != nil || d < 0 {
			bad("repeatInterval", "repeatInterval: %q is not a duration of 0 or more (4h, 30m)", fc.RepeatInterval)
		}
		cfg.RepeatInterval = d
	}
	names := map[string]bool{}
	for i, p := range fc.Providers {
		at := fmt.Sprintf("providers[%d]", i)
		pr := Provider{Name: p.Name, Type: ProviderType(p.Type)}
		switch {
		case !providerName.MatchString(p.Name):
			bad(at+".name", "%s.name: %q is not a name (lower-case letters, digits and dashes)", at, p.Name)
		case names[p.Name]:
			bad(at+".name", "%s.name: %q is a second provider of that name", at, p.Name)
		}
		names[p.Name] = true
		switch pr.Type {
		case ProviderSlack, ProviderTeams, ProviderWebhook:
		default:
			bad(at+".type", "%s.type: %q is not slack, teams or webhook", at, p.Type)
		}
		switch {
		case p.URLFile != "":
			b, err := os.ReadFile(p.URLFile)
			if err != nil {
				bad(at+".urlFile", "%s.urlFile: %v", at, err)
			}
			pr.URL = strings.TrimSpace(string(b))
			if err == nil && !isHTTPURL(pr.URL) {
				bad(at+".urlFile", "%s.urlFile: %s does not hold an http or https URL", at, p.URLFile)
			}
		case p.URL == "":
			bad(at, "%s: url or urlFile required", at)
		default:
			pr.URL = p.URL
			if !isHTTPURL(pr.URL) {
				bad(at+".url", "%s.url: not an http or https URL (its value is not shown)", at)
			}
		}
		if p.SecretFile != "" {
			if pr.Type != ProviderWebhook {
				bad(at+".secretFile", "%s.secretFile: only a webhook provider is signed", at)
			}
			b, err := os.ReadFile(p.SecretFile)
			if err != nil {
				bad(at+".secretFile", "%s.secretFile: %v", at, err)
			} else if pr.Secret = bytes.TrimSpace(b); len(pr.Secret) == 0 {
				bad(at+".secretFile", "%s.secretFile: %s is empty", at, p.SecretFile)
			}
		}
		cfg.Providers = append(cfg.Providers, pr)
	}
	for i, r := range fc.Routes {
		at := fmt.Sprintf("routes[%d]", i)
		if !names[r.Provider] {
			bad(at+".provider", "%s.provider: %q is no provider of providers", at, r.Provider)
		}
		for j, reason := range r.Reasons {
			if !slices.Contains(allReasons, reason) {
				bad(fmt.Sprintf("%s.reasons[%d]", at, j), "%s.reasons: unknown reason %q (reasons: %s)", at, reason, joined(allReasons))
			}
		}
		for j, s := range r.Severities {
			if !slices.Contains(allSeverities, s) {
				bad(fmt.Sprintf("%s.severities[%d]", at, j), "%s.severities: %q is not info, warning or error", at, s)
			}
		}
		for j, t := range r.Teams {
			if strings.TrimSpace(t) == "" {
				bad(fmt.Sprintf("%s.teams[%d]", at, j), "%s.teams[%d]: empty", at, j)
			}
		}
		cfg.Routes = append(cfg.Routes, Route{Provider: r.Provider, Reasons: r.Reasons, Severities: r.Severities, Teams: r.Teams})
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].(*ConfigError).Line < errs[j].(*ConfigError).Line })
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func joined[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

// nodeLines maps the path of every key and list item under n (providers[0].url, routes[1].teams[0])
// to its line.
func nodeLines(pos map[string]int, at string, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if at != "" {
				k = at + "." + k
			}
			pos[k] = n.Content[i].Line
			nodeLines(pos, k, n.Content[i+1])
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			k := fmt.Sprintf("%s[%d]", at, i)
			pos[k] = c.Line
			nodeLines(pos, k, c)
		}
	}
}
