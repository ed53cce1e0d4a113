package review

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/usage"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The actions of an idle rule.
const (
	// IdleReport reports a job idle for the rule's time: an Event and the daemon's log.
	IdleReport = "report"
	// IdlePause pauses it as a commit by gpuctl, as `gpuctl pause job` does.
	IdlePause = "pause"
)

// IdleRule is a rule of the idle policy (gpuctl-policy.yaml's idle list): a job of the rule's
// teams and kinds whose GPUs all stay below Threshold for For is reported or paused. The first
// rule that matches a job is its rule; a job that no rule matches is left alone.
type IdleRule struct {
	// Name names the rule in messages; default idle[i], its place in the list.
	Name string `yaml:"name" json:"name,omitempty"`
	// Threshold is the utilization in percent below which a GPU is idle (above 0, at most 100;
	// default usage.DefaultIdleThreshold).
	Threshold float64 `yaml:"threshold" json:"threshold"`
	// For is the idle run, going on now, that triggers the action (required).
	For time.Duration `yaml:"for" json:"for"`
	// WarnBefore is how long before For a warning is given (an Event and the report); 0: none.
	WarnBefore time.Duration `yaml:"warnBefore" json:"warnBefore,omitempty"`
	// Action is IdleReport (default) or IdlePause.
	Action string `yaml:"action" json:"action"`
	// Teams are the namespaces the rule applies to; empty: all.
	Teams []string `yaml:"teams" json:"teams,omitempty"`
	// Kinds are the job kinds it applies to (training, inference, notebook, compute); empty: all.
	Kinds []string `yaml:"kinds" json:"kinds,omitempty"`
}

// Matches reports whether the rule applies to a job of namespace and kind.
func (r *IdleRule) Matches(namespace, kind string) bool {
	return (len(r.Teams) == 0 || slices.Contains(r.Teams, namespace)) && (len(r.Kinds) == 0 || slices.Contains(r.Kinds, kind))
}

// IdleRuleFor returns the first idle rule that matches a job of namespace and kind, nil for
// none (also for a nil policy).
func (p *Policy) IdleRuleFor(namespace, kind string) *IdleRule {
	if p == nil {
		return nil
	}
	for i := range p.Idle {
		if p.Idle[i].Matches(namespace, kind) {
			return &p.Idle[i]
		}
	}
	return nil
}

// checkIdle validates the idle rules and sets their defaults (Name, Threshold, Action);
// pos holds the lines of their keys (keyLines).
func checkIdle(file string, rules []IdleRule, pos map[string]int) []error {
	var errs []error
	names := map[string]int{}
	for i := range rules {
		r := &rules[i]
		at := "idle[" + strconv.Itoa(i) + "]"
		bad := func(key, format string, args ...any) {
			line, ok := pos[at+"."+key]
			if !ok {
				line = pos[at]
			}
			errs = append(errs, &PolicyError{File: file, Line: line, Message: at + "." + key + ": " + fmt.Sprintf(format, args...)})
		}
		if r.Name == "" {
			r.Name = at
		} else if j, dup := names[r.Name]; dup {
			bad("name", "%q is also the name of idle[%d]", r.Name, j)
		} else {
			names[r.Name] = i
		}
		if _, set := pos[at+".threshold"]; !set {
			r.Threshold = usage.DefaultIdleThreshold
		} else if !(r.Threshold > 0 && r.Threshold <= 100) { // NaN (.nan) is neither
			bad("threshold", "%v is not a utilization in percent above 0 and at most 100", r.Threshold)
		}
		switch {
		case r.For == 0:
			bad("for", "required: the idle run that triggers the action (for: 2h)")
		case r.For < time.Minute:
			bad("for", "%s is less than a minute", r.For)
		}
		if r.WarnBefore < 0 || r.For > 0 && r.WarnBefore >= r.For {
			bad("warnBefore", "%s must be 0 (no warning) or more, and less than for (%s)", r.WarnBefore, r.For)
		}
		switch r.Action {
		case "":
			r.Action = IdleReport
		case IdleReport, IdlePause:
		default:
			bad("action", "%q is not %s or %s", r.Action, IdleReport, IdlePause)
		}
		for _, t := range r.Teams {
			if msgs := validation.IsDNS1123Label(t); len(msgs) > 0 {
				bad("teams", "%q is not a namespace: %s", t, strings.Join(msgs, "; "))
			}
		}
		for _, k := range r.Kinds {
			if !slices.Contains(render.WorkloadKinds, k) {
				bad("kinds", "%q is not a job kind (%s)", k, strings.Join(render.WorkloadKinds, ", "))
			}
		}
	}
	return errs
}

// idleLines records the lines of the idle rules and of their keys in pos.
func idleLines(pos map[string]int, seq *yaml.Node) {
	for i, item := range seq.Content {
		at := "idle[" + strconv.Itoa(i) + "]"
		pos[at] = item.Line
		if item.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			pos[at+"."+item.Content[j].Value] = item.Content[j].Line
		}
	}
}
