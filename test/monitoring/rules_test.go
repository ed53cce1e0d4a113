package monitoring

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/promtest"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"sigs.k8s.io/yaml"
)

// ruleFile is the PrometheusRule, relative to the repository root.
var ruleFile = filepath.Join("deploy", "monitoring", "prometheusrule.yaml")

// prometheusRule is the part of a PrometheusRule that Prometheus reads: its groups.
type prometheusRule struct {
	Kind string `json:"kind"`
	Spec struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

type ruleGroup struct {
	Name  string           `json:"name"`
	Rules []map[string]any `json:"rules"`
}

// repoFile reads a file of the repository.
func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rulesFile writes the groups of the PrometheusRule in src to dir/rules.yaml, a Prometheus
// rules file, and returns its path and the groups.
func rulesFile(t *testing.T, src []byte, dir string) (string, []ruleGroup) {
	t.Helper()
	var pr prometheusRule
	if err := yaml.Unmarshal(src, &pr); err != nil {
		t.Fatalf("%s: %v", ruleFile, err)
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		t.Fatalf("%s: kind %q with %d rule groups, want a PrometheusRule with groups", ruleFile, pr.Kind, len(pr.Spec.Groups))
	}
	out, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, pr.Spec.Groups
}

// promtool runs promtool with args and returns its output and error.
func promtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	dir, err := promtest.Binaries(ctx, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "promtool"), args...).CombinedOutput()
	return string(out), err
}

// checkAndTest runs `promtool check rules` on the rules of src and `promtool test rules` with
// testdata/rules_test.yaml against them.
func checkAndTest(t *testing.T, src []byte) (check, test string, checkErr, testErr error) {
	t.Helper()
	dir := t.TempDir()
	rules, _ := rulesFile(t, src, dir)
	unit, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), unit, 0o644); err != nil {
		t.Fatal(err)
	}
	check, checkErr = promtool(t, "check", "rules", rules)
	test, testErr = promtool(t, "test", "rules", filepath.Join(dir, "rules_test.yaml"))
	return check, test, checkErr, testErr
}

// TestRules: the PrometheusRule's groups pass `promtool check rules`, and the unit tests of
// testdata/rules_test.yaml (each alert fires on its input series, and does not on the others)
// pass; every alert has a severity, a summary, a description and a runbook, and a unit test.
func TestRules(t *testing.T) {
	src := repoFile(t, ruleFile)
	check, test, checkErr, testErr := checkAndTest(t, src)
	if checkErr != nil {
		t.Errorf("promtool check rules %s: %v\n%s", ruleFile, checkErr, check)
	}
	if testErr != nil {
		t.Errorf("promtool test rules testdata/rules_test.yaml: %v\n%s", testErr, test)
	}
	_, groups := rulesFile(t, src, t.TempDir())
	unit, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			name, _ := r["alert"].(string)
			n++
			labels, _ := r["labels"].(map[string]any)
			ann, _ := r["annotations"].(map[string]any)
			if s, _ := labels["severity"].(string); s != "critical" && s != "warning" && s != "info" {
				t.Errorf("%s: alert %q: severity %q, want critical, warning or info", ruleFile, name, s)
			}
			for _, key := range []string{"summary", "description", "runbook_url"} {
				if s, _ := ann[key].(string); s == "" {
					t.Errorf("%s: alert %q: no annotation %s", ruleFile, name, key)
				}
			}
			if !strings.Contains(string(unit), "alertname: "+name+"\n") {
				t.Errorf("alert %q has no unit test in testdata/rules_test.yaml", name)
			}
		}
	}
	if n < 7 {
		t.Errorf("%s: %d alerts, want at least 7", ruleFile, n)
	}
}

// TestRulesCatchBreakage is the test of TestRules: a syntax error fails `promtool check
// rules`, and a wrong threshold or aggregation fails the unit tests.
func TestRulesCatchBreakage(t *testing.T) {
	src := string(repoFile(t, ruleFile))
	for name, tc := range map[string]struct{ from, to string }{
		"syntax":    {"expr: time() - max by (namespace, job)", "expr: time() - max by (namespace, job"},
		"threshold": {"(gpuctl_last_success_timestamp_seconds) > 900", "(gpuctl_last_success_timestamp_seconds) > 9000"},
		"standby":   {"max by (namespace, job) (gpuctl_last_success_timestamp_seconds)", "gpuctl_last_success_timestamp_seconds"},
		"bucket":    {`_bucket{le="60"}`, `_bucket{le="30"}`},
		"for":       {"for: 2h", "for: 1h"},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(src, tc.from) {
				t.Fatalf("%s no longer holds %q: update this test", ruleFile, tc.from)
			}
			check, test, checkErr, testErr := checkAndTest(t, []byte(strings.Replace(src, tc.from, tc.to, 1)))
			if name == "syntax" {
				if checkErr == nil {
					t.Errorf("promtool check rules passed a broken expression:\n%s", check)
				}
				return
			}
			if checkErr != nil {
				t.Fatalf("promtool check rules: %v\n%s", checkErr, check)
			}
			if testErr == nil || !strings.Contains(test, "FAILED") {
				t.Errorf("promtool test rules passed with %q in place of %q:\n%s", tc.to, tc.from, test)
			}
		})
	}
}
