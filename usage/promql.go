package usage

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// dcgm-exporter's metric names (its etc/default-counters.csv).
const (
	MetricGPUUtil      = "DCGM_FI_DEV_GPU_UTIL"          // gauge, %
	MetricEngineActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE" // gauge, ratio 0–1; also on MIG
	MetricFBUsed       = "DCGM_FI_DEV_FB_USED"           // gauge, MiB
	MetricFBFree       = "DCGM_FI_DEV_FB_FREE"           // gauge, MiB
	MetricPower        = "DCGM_FI_DEV_POWER_USAGE"       // gauge, W
	MetricXID          = "DCGM_FI_DEV_XID_ERRORS"        // gauge, last XID
)

// podLabels are the labels that name a GPU's pod, in both forms; gpuLabels also name the GPU.
const (
	podLabels    = "namespace, pod, exported_namespace, exported_pod"
	gpuKeyLabels = podLabels + ", Hostname, hostname, gpu, UUID, GPU_I_ID"
	gpuLabels    = gpuKeyLabels + ", container, exported_container, modelName"
)

// Scope selects the series a query reads: those of pods in Namespaces (all when empty), and
// of these Pods (namespace/name) when set. A team's token reads its namespaces only.
type Scope struct {
	Namespaces []string
	// Pods are namespace/name of pods; when set, only their series are read.
	Pods []string
	// selector is the administrator's matchers (Options.Selector), which every selector
	// of the client's queries carries; the client sets it.
	selector string
}

// matchers returns the label matchers of the scope, one list per label form (plain and
// exported_); nil when the scope selects everything.
func (s Scope) matchers() []string {
	var nsPlain, nsExported, podPlain, podExported []string
	namespaces := s.Namespaces
	var pods []string
	if len(s.Pods) > 0 {
		namespaces = nil
		for _, p := range s.Pods {
			ns, name, _ := strings.Cut(p, "/")
			namespaces = append(namespaces, ns)
			pods = append(pods, name)
		}
	}
	if len(namespaces) > 0 {
		re := alternation(namespaces)
		nsPlain = append(nsPlain, "namespace=~"+re)
		nsExported = append(nsExported, "exported_namespace=~"+re)
	}
	if len(pods) > 0 {
		re := alternation(pods)
		podPlain = append(podPlain, "pod=~"+re)
		podExported = append(podExported, "exported_pod=~"+re)
	}
	if len(nsPlain)+len(podPlain) == 0 {
		if s.selector == "" {
			return nil
		}
		return []string{s.selector}
	}
	if s.selector != "" {
		nsPlain = append(nsPlain, s.selector)
		nsExported = append(nsExported, s.selector)
	}
	return []string{strings.Join(append(nsPlain, podPlain...), ","), strings.Join(append(nsExported, podExported...), ",")}
}

// matcherRE is one label matcher of a selector: name, operator, double-quoted value.
var matcherRE = regexp.MustCompile(`^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*`)

// checkSelector checks that s is label matchers separated by commas (job="dcgm-exporter",
// namespace="gpu-operator"), the inside of a PromQL selector's braces, and returns it trimmed.
func checkSelector(s string) (string, error) {
	rest := strings.TrimSpace(s)
	if rest == "" {
		return "", nil
	}
	for {
		m := matcherRE.FindString(rest)
		if m == "" {
			return "", fmt.Errorf("--prometheus-selector %q: want label matchers such as job=\"dcgm-exporter\",namespace=\"gpu-operator\" (name, =, !=, =~ or !~, a double-quoted value; separated by commas)", s)
		}
		rest = rest[len(m):]
		if rest == "" {
			return strings.TrimSpace(s), nil
		}
		if rest[0] != ',' {
			return "", fmt.Errorf("--prometheus-selector %q: a comma must separate the matchers", s)
		}
		rest = rest[1:]
	}
}

// alternation is a PromQL string holding a regular expression that matches exactly the
// given values: quoted, so no value can widen it.
func alternation(values []string) string {
	vs := append([]string(nil), values...)
	sort.Strings(vs)
	vs = uniq(vs)
	for i, v := range vs {
		vs[i] = regexp.QuoteMeta(v)
	}
	return strconv.Quote(strings.Join(vs, "|"))
}

func uniq(vs []string) []string {
	out := vs[:0]
	for i, v := range vs {
		if i == 0 || v != vs[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// series is the PromQL of a metric in the scope: fn(metric{...}[rng]) for each label form,
// joined with or. fn and rng may be "" for the bare selector.
func (s Scope) series(metric, fn string, rng time.Duration) string {
	one := func(m string) string {
		sel := metric
		if m != "" {
			sel += "{" + m + "}"
		}
		if rng > 0 {
			sel += "[" + promDuration(rng) + "]"
		}
		if fn != "" {
			sel = fn + "(" + sel + ")"
		}
		return sel
	}
	switch ms := s.matchers(); len(ms) {
	case 0:
		return one("")
	case 1:
		return one(ms[0])
	default:
		return "(" + one(ms[0]) + " or " + one(ms[1]) + ")"
	}
}

// util is the PromQL of GPU utilization in percent: DCGM_FI_DEV_GPU_UTIL, or the engine's
// active ratio × 100 for a GPU (a MIG instance) that has no such series.
func (s Scope) util(fn string, rng time.Duration) string {
	return "(" + s.series(MetricGPUUtil, fn, rng) + " or (" + s.series(MetricEngineActive, fn, rng) + " * 100))"
}

// promDuration writes a duration as PromQL does (whole seconds at least).
func promDuration(d time.Duration) string {
	if d < time.Second {
		d = time.Second
	}
	return model.Duration(d.Truncate(time.Second)).String()
}

// perGPU keeps one series per GPU: the same GPU scraped twice (two scrape jobs, Prometheus
// pairs, a target's old instance label) is not counted twice.
func perGPU(expr string) string { return by("max", gpuKeyLabels, expr) }

// by aggregates an expression by labels.
func by(agg, labels, expr string) string { return fmt.Sprintf("%s by (%s) (%s)", agg, labels, expr) }
