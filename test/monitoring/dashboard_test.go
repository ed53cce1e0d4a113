package monitoring

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// dashboardFile is the Grafana dashboard, relative to the repository root.
var dashboardFile = filepath.Join("deploy", "monitoring", "grafana-dashboard.json")

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource map[string]any `json:"datasource"`
	Targets    []struct {
		Expr       string         `json:"expr"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

// labelValues is a Grafana variable query's metric: label_values(metric{...}, label).
var labelValues = regexp.MustCompile(`label_values\(\s*([^,{)]+)`)

// checkDashboard returns what is wrong with a dashboard's JSON: each panel (but rows) has a
// title, the datasource variable and at least one query; every metric name of every query and
// variable is in known; the variables datasource, team and pool exist.
func checkDashboard(b []byte, known map[string]bool) []string {
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if d.Title == "" || d.UID == "" {
		problems = append(problems, "no title or uid")
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if q, ok := v.Query.(map[string]any); ok {
			v.Query = q["query"]
		}
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			sm := labelValues.FindStringSubmatch(q)
			if sm == nil {
				problems = append(problems, "variable "+v.Name+": query "+q+" is no label_values(metric, label)")
			} else if !known[strings.TrimSpace(sm[1])] {
				problems = append(problems, "variable "+v.Name+": unknown metric "+sm[1])
			}
		}
	}
	for _, want := range []string{"datasource", "team", "pool"} {
		if !vars[want] {
			problems = append(problems, "no variable "+want)
		}
	}
	var panels []panel
	for _, p := range d.Panels {
		panels = append(append(panels, p), p.Panels...)
	}
	n := 0
	for _, p := range panels {
		if p.Type == "row" {
			continue
		}
		n++
		where := p.Title
		if where == "" {
			problems = append(problems, "a panel has no title")
		}
		if uid, _ := p.Datasource["uid"].(string); uid != "${datasource}" {
			problems = append(problems, where+": datasource "+uid+", want ${datasource}")
		}
		if len(p.Targets) == 0 {
			problems = append(problems, where+": no query")
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				problems = append(problems, where+": a query without expr")
			}
			if uid, _ := q.Datasource["uid"].(string); uid != "${datasource}" {
				problems = append(problems, where+": a query's datasource "+uid+", want ${datasource}")
			}
			for _, m := range unknownMetrics(q.Expr, known) {
				problems = append(problems, where+": unknown metric "+m+" in "+q.Expr)
			}
		}
	}
	if n == 0 {
		problems = append(problems, "no panels")
	}
	return problems
}

// TestDashboard: the dashboard's JSON parses, every panel has a query on the datasource
// variable, and each metric it reads is one gpuctl-reconciler registers; so is each metric
// the PrometheusRule's expressions read.
func TestDashboard(t *testing.T) {
	known := registered(t)
	for _, p := range checkDashboard(repoFile(t, dashboardFile), known) {
		t.Errorf("%s: %s", dashboardFile, p)
	}
	var pr prometheusRule
	if err := yaml.Unmarshal(repoFile(t, ruleFile), &pr); err != nil {
		t.Fatal(err)
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			expr, _ := r["expr"].(string)
			if u := unknownMetrics(expr, known); len(u) > 0 {
				t.Errorf("%s: alert %v: unknown metrics %q in %s", ruleFile, r["alert"], u, expr)
			}
		}
	}
}

// TestDashboardCatchesBreakage is the test of TestDashboard: a misspelt metric, a panel
// without a query and JSON that does not parse are each reported.
func TestDashboardCatchesBreakage(t *testing.T) {
	known := registered(t)
	src := string(repoFile(t, dashboardFile))
	for name, tc := range map[string]struct{ from, to, want string }{
		"metric":   {"gpuctl_drift_objects)", "gpuctl_drift_object)", "unknown metric gpuctl_drift_object"},
		"variable": {"label_values(gpuctl_team_gpus, team)", "label_values(gpuctl_team_gpu, team)", "unknown metric gpuctl_team_gpu"},
		"no query": {`"targets": [`, `"targets": [], "x": [`, "no query"},
		"json":     {`"panels": [`, `"panels": [[`, "invalid character"},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(src, tc.from) {
				t.Fatalf("%s no longer holds %q: update this test", dashboardFile, tc.from)
			}
			problems := checkDashboard([]byte(strings.Replace(src, tc.from, tc.to, 1)), known)
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Errorf("with %q in place of %q: problems %q, want one with %q", tc.to, tc.from, problems, tc.want)
			}
		})
	}
}
