package review

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/yamlerr"
	"github.com/gpuctl/gpuctl/render"
	"go.yaml.in/yaml/v3"
)

// Rule names a check; it is the key of a policy's severity map.
type Rule string

// Rules that a review checks.
const (
	// RuleRender: the head revision does not render (namespace escapes, host paths outside
	// the allow-list, invalid files).
	RuleRender Rule = "render"
	// RuleQuota: a team requests more GPUs than its quota.
	RuleQuota Rule = "quota"
	// RulePool: a workload names a pool that no pool file defines.
	RulePool Rule = "pool"
	// RuleGPUType: a workload asks for a GPU type that its pool's nodes do not declare.
	RuleGPUType Rule = "gpuType"
	// RuleMaxGPUs: a workload requests more GPUs in all than maxGPUsPerJob.
	RuleMaxGPUs Rule = "maxGPUsPerJob"
	// RuleRegistry: an image comes from a registry outside allowedRegistries.
	RuleRegistry Rule = "allowedRegistries"
	// RuleHighPriority: priority high in a namespace outside highPriorityTeams.
	RuleHighPriority Rule = "highPriorityTeams"
	// RulePolicy: the policy file is invalid, or changes in the reviewed change.
	RulePolicy Rule = "policy"
	// RuleSkipped: files that were not read (too large, symbolic links).
	RuleSkipped Rule = "skipped"
)

// SeverityOff is the severity of a rule that a policy turns off: the rule is not checked, so
// no Violation carries it. The other severities are render's: render.SeverityError fails the
// review, render.SeverityWarning is reported only.
const SeverityOff render.Severity = "off"

// defaultSeverity is each rule's severity when the policy does not set it.
var defaultSeverity = map[Rule]render.Severity{
	RuleRender: render.SeverityError, RuleQuota: render.SeverityError, RulePool: render.SeverityError, RuleGPUType: render.SeverityError,
	RuleMaxGPUs: render.SeverityError, RuleRegistry: render.SeverityError, RuleHighPriority: render.SeverityError,
	RulePolicy: render.SeverityError, RuleSkipped: render.SeverityWarning,
}

// Policy is a repository's gpuctl-policy.yaml.
type Policy struct {
	Version string `yaml:"version" json:"version"`
	// MaxGPUsPerJob limits the GPUs of one workload in all (pods × GPUs per pod); 0: no limit.
	MaxGPUsPerJob int `yaml:"maxGPUsPerJob" json:"maxGPUsPerJob,omitempty"`
	// AllowedRegistries are registry hosts or prefixes (registry.example.com,
	// docker.io/library) that images must come from; empty: any.
	AllowedRegistries []string `yaml:"allowedRegistries" json:"allowedRegistries,omitempty"`
	// HighPriorityTeams are the namespaces that may use priority high; when the key is
	// absent, any namespace may.
	HighPriorityTeams []string `yaml:"highPriorityTeams" json:"highPriorityTeams,omitempty"`
	// Severity overrides the severity of rules: error, warning or off.
	Severity map[Rule]render.Severity `yaml:"severity" json:"severity,omitempty"`
	// Idle are the rules of the idle policy that the daemon applies to the running jobs' GPUs
	// (policy_idle.go, docs/metrics.md): the first rule that matches a job is its rule.
	Idle []IdleRule `yaml:"idle" json:"idle,omitempty"`

	// File is where the policy was read from; empty for the default policy.
	File string `yaml:"-" json:"file,omitempty"`
	// restrictHigh is set when highPriorityTeams is written.
	restrictHigh bool
}

// SeverityOf returns the severity of a rule under the policy.
func (p *Policy) SeverityOf(r Rule) render.Severity {
	if p != nil {
		if s, ok := p.Severity[r]; ok {
			return s
		}
	}
	return defaultSeverity[r]
}

// PolicyError is a problem in a policy file, with its position (file:line: message).
type PolicyError = yamlerr.Error

// ParsePolicy reads a policy file strictly: unknown fields, wrong types, an unknown version,
// unknown rules and severities are errors, each a *PolicyError with the file and line, joined.
func ParsePolicy(file string, data []byte) (*Policy, error) {
	p := &Policy{File: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlerr.Errors(file, err, map[string]string{"review.Policy": "the policy"})
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // it decoded above, so it parses
	pos := keyLines(&root)
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &PolicyError{File: file, Line: pos[key], Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case p.Version == "":
		bad("", "version: required (version: %s)", render.Version)
	case p.Version != render.Version:
		bad("version", "version: unsupported version %q (want %s)", p.Version, render.Version)
	}
	if p.MaxGPUsPerJob < 0 {
		bad("maxGPUsPerJob", "maxGPUsPerJob: must be 0 (no limit) or more, got %d", p.MaxGPUsPerJob)
	}
	for i, r := range p.AllowedRegistries {
		if strings.TrimSpace(r) == "" || strings.ContainsAny(r, " @") {
			bad("allowedRegistries", "allowedRegistries[%d]: %q is not a registry or prefix", i, r)
		}
	}
	_, p.restrictHigh = pos["highPriorityTeams"]
	for r, s := range p.Severity {
		if _, ok := defaultSeverity[r]; !ok {
			bad("severity."+string(r), "severity: unknown rule %q (rules: %s)", r, ruleNames())
		}
		if s != render.SeverityError && s != render.SeverityWarning && s != SeverityOff {
			bad("severity."+string(r), "severity.%s: %q is not error, warning or off", r, s)
		}
	}
	errs = append(errs, checkIdle(file, p.Idle, pos)...)
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].(*PolicyError).Line < errs[j].(*PolicyError).Line })
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// keyLines maps the top-level keys, the keys of severity and those of each idle rule
// (idle[i], idle[i].for) to their lines; "" is line 1.
func keyLines(root *yaml.Node) map[string]int {
	pos := map[string]int{"": 1}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return pos
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		pos[k.Value] = k.Line
		if k.Value == "severity" && v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				pos["severity."+v.Content[j].Value] = v.Content[j].Line
			}
		}
		if k.Value == "idle" && v.Kind == yaml.SequenceNode {
			idleLines(pos, v)
		}
	}
	return pos
}

func ruleNames() string {
	names := make([]string, 0, len(defaultSeverity))
	for r := range defaultSeverity {
		names = append(names, string(r))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// findPolicy returns the path of the policy file nearest to dir (upwards), or "".
func findPolicy(files map[string]string, dir string) string {
	for d := path.Clean(dir); ; d = path.Dir(d) {
		p := path.Join(d, PolicyFile)
		if _, ok := files[p]; ok {
			return p
		}
		if d == "." || d == "/" {
			return ""
		}
	}
}
