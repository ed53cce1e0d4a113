package render_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

func parseConfig(t *testing.T, text string) *render.Config {
	t.Helper()
	cfg, diags := render.ParseConfig(".gpuctl.yaml", []byte(text))
	if len(diags) > 0 {
		t.Fatalf("ParseConfig: %v", diags)
	}
	return cfg
}

// wantConfigErrors checks that ParseConfig of each text (a key of bad) reports its error.
func wantConfigErrors(t *testing.T, bad map[string]string) {
	t.Helper()
	for text, want := range bad {
		_, diags := render.ParseConfig(".gpuctl.yaml", []byte(text))
		var got []string
		for _, d := range diags {
			got = append(got, d.Error())
		}
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("ParseConfig(%q):\n got %q\nwant %q", text, got, want)
		}
	}
}

func TestTeamDir(t *testing.T) {
	cases := map[string]struct {
		rules, team, want string
	}{
		"capture":                {"  - {path: teams/*/**, namespace: $1}\n", "alice", "teams/alice"},
		"prefix in template":     {"  - {path: groups/*, namespace: team-$1}\n", "team-ml", "groups/ml"},
		"template does not fit":  {"  - {path: groups/*, namespace: team-$1}\n", "ml", ""},
		"second wildcard":        {"  - {path: org/*/teams/*/**, namespace: $2}\n", "bob", ""},
		"literal namespace":      {"  - {path: shared/**, namespace: ml}\n", "ml", "shared"},
		"glob refuses the value": {"  - {path: \"teams/[a-m]*/**\", namespace: $1}\n", "zed", ""},
		"glob takes the value":   {"  - {path: \"teams/[a-m]*/**\", namespace: $1}\n", "alice", "teams/alice"},
		// An earlier rule maps teams/bob to ops: bob has no directory of his own.
		"shadowed by an earlier rule": {"  - {path: teams/bob/**, namespace: ops}\n  - {path: teams/*/**, namespace: $1}\n", "bob", ""},
		"reserved team":               {"  - {path: teams/*/**, namespace: $1}\n", "kube-system", ""},
		"not a name":                  {"  - {path: teams/*/**, namespace: $1}\n", "../etc", ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := parseConfig(t, "namespaces:\n"+c.rules)
			got, ok := cfg.TeamDir(c.team)
			if got != c.want || ok != (c.want != "") {
				t.Fatalf("TeamDir(%q) = %q, %v; want %q", c.team, got, ok, c.want)
			}
		})
	}
}

func TestTeams(t *testing.T) {
	cfg := parseConfig(t, "teams:\n  alice@example.com: alice\n  Bob@Example.com: bob\n")
	for email, want := range map[string]string{"alice@example.com": "alice", "bob@example.com": "bob", "carol@example.com": ""} {
		if got, ok := cfg.TeamOf(email); got != want || ok != (want != "") {
			t.Errorf("TeamOf(%q) = %q, %v; want %q", email, got, ok, want)
		}
	}
	bad := map[string]string{
		"teams:\n  alice: alice\n":             `.gpuctl.yaml:2:3: teams.alice: "alice" is not an e-mail address`,
		"teams:\n  a@x.io: Alice\n":            `.gpuctl.yaml:2:3: teams.a@x.io: team "Alice" is not a valid namespace name`,
		"teams:\n  a@x.io: kube-system\n":      `.gpuctl.yaml:2:3: teams.a@x.io: tenancy reserved-namespace: team "kube-system" is reserved`,
		"teams:\n  a@x.io: a\n  A@X.io: b\n":   `.gpuctl.yaml:3:3: teams.A@X.io: "A@X.io" is also listed as "a@x.io"`,
		"teams:\n  a@x.io: [a]\n":              `.gpuctl.yaml:2:11: teams.a@x.io: expected a string, got a list`,
		"teams: [a]\n":                         `.gpuctl.yaml:1:8: teams: expected a mapping of names, got a list`,
		"teams:\n  a@x.io: a\n  a@x.io: b\n":   `.gpuctl.yaml:3:3: teams.a@x.io: duplicate key "a@x.io" (first set on line 2)`,
		"namespaces: []\nteam:\n  a@x.io: a\n": `.gpuctl.yaml:2:1: team: unknown field "team", did you mean "teams"?`,
	}
	wantConfigErrors(t, bad)
}

// TestDefaultDir: where a write puts a file of namespace default: the kind's directory, as
// examples/ keeps them, or defaultNamespaceDir; never a directory that a rule maps.
func TestDefaultDir(t *testing.T) {
	rules := "namespaces:\n  - {path: teams/*/**, namespace: $1}\n"
	cases := map[string]struct {
		config, kind, want, err string
	}{
		"the kind's directory":   {rules, "training", "training", ""},
		"no configuration":       {"", "inference", "inference", ""},
		"configured":             {rules + "defaultNamespaceDir: jobs/\n", "training", "jobs", ""},
		"configured: the root":   {rules + "defaultNamespaceDir: .\n", "training", "", ""},
		"no workload":            {rules, "", "", "the file has no workload to name one after"},
		"no workload, a setting": {rules + "defaultNamespaceDir: jobs\n", "", "jobs", ""},
		"the kind's is mapped":   {"namespaces:\n  - {path: training/**, namespace: ml}\n", "training", "", `training/, is mapped to namespace "ml"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := parseConfig(t, c.config)
			got, err := cfg.DefaultDir(c.kind)
			if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("DefaultDir(%q) = %q, %v; want %q, %q", c.kind, got, err, c.want, c.err)
			}
		})
	}
	bad := map[string]string{
		rules + "defaultNamespaceDir: teams/alice\n": `.gpuctl.yaml:3:22: defaultNamespaceDir: "teams/alice" is mapped to namespace "alice" by the namespace rules`,
		"defaultNamespaceDir: /srv/jobs\n":           `.gpuctl.yaml:1:22: defaultNamespaceDir: "/srv/jobs" must be a clean directory relative to the root`,
		"defaultNamespaceDir: ../jobs\n":             `defaultNamespaceDir: "../jobs" must be a clean directory relative to the root, without ..`,
		"defaultNamespaceDir: jobs//x\n":             `defaultNamespaceDir: "jobs//x" must be a clean directory`,
		"defaultNamespaceDir: jobs/.git\n":           `defaultNamespaceDir: path "jobs/.git"`,
		"defaultNamespaceDir: [jobs]\n":              `.gpuctl.yaml:1:22: defaultNamespaceDir: expected a string, got a list`,
	}
	wantConfigErrors(t, bad)
}
