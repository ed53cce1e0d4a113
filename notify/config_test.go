package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "ops-slack-url")
	secretFile := filepath.Join(dir, "alice-hmac")
	must(t, os.WriteFile(urlFile, []byte("https://hooks.slack.example/services/T0/B0/SECRETPATH\n"), 0o600))
	must(t, os.WriteFile(secretFile, []byte("k3y\n"), 0o600))
	data := `version: v0.1
providers:
  - name: ops-slack
    type: slack
    urlFile: ` + urlFile + `
  - name: alice-hook
    type: webhook
    url: https://hooks.alice.example/gpuctl
    secretFile: ` + secretFile + `
routes:
  - provider: ops-slack
    reasons: [SyncFailed, SyncRecovered, ShadowWorkload]
    severities: [warning, error]
    teams: []
  - provider: alice-hook
    teams: [alice]
repeatInterval: 4h
`
	cfg, err := ParseConfig("gpuctl-alerts.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RepeatInterval != 4*time.Hour || len(cfg.Providers) != 2 || len(cfg.Routes) != 2 {
		t.Fatalf("config %+v", cfg)
	}
	if p := cfg.Providers[0]; p.URL != "https://hooks.slack.example/services/T0/B0/SECRETPATH" || p.Type != ProviderSlack {
		t.Errorf("urlFile: provider %+v", p)
	}
	if p := cfg.Providers[1]; string(p.Secret) != "k3y" || p.URL != "https://hooks.alice.example/gpuctl" {
		t.Errorf("secretFile: provider %+v", p)
	}
	if r := cfg.Routes[0]; len(r.Reasons) != 3 || len(r.Severities) != 2 || len(r.Teams) != 0 {
		t.Errorf("route %+v", r)
	}
}

func TestParseConfigErrors(t *testing.T) {
	const secretURL = "ftp://hooks.example/SECRETPATH"
	cases := map[string]struct{ data, want string }{
		"no version":    {"providers: []\n", "f.yaml:1: version: required"},
		"bad version":   {"version: v9\n", "f.yaml:1: version: unsupported version \"v9\""},
		"unknown field": {"version: v0.1\nrepeat: 4h\n", "f.yaml:2: field repeat not found in the alerts file"},
		"unknown provider field": {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n    url: https://x.example/\n    token: t\n",
			"f.yaml:6: field token not found in a provider"},
		"wrong type": {"version: v0.1\nroutes:\n  - provider: a\n    teams: alice\n", "f.yaml:4: cannot unmarshal"},
		"bad name": {"version: v0.1\nproviders:\n  - name: Ops_Slack\n    type: slack\n    url: https://x.example/\n",
			"f.yaml:3: providers[0].name: \"Ops_Slack\" is not a name"},
		"twice": {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n    url: https://x.example/\n  - name: a\n    type: slack\n    url: https://x.example/\n",
			"f.yaml:6: providers[1].name: \"a\" is a second provider"},
		"bad type": {"version: v0.1\nproviders:\n  - name: a\n    type: discord\n    url: https://x.example/\n",
			"f.yaml:4: providers[0].type: \"discord\" is not slack, teams or webhook"},
		"no url":  {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n", "f.yaml:3: providers[0]: url or urlFile required"},
		"bad url": {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n    url: " + secretURL + "\n", "f.yaml:5: providers[0].url: not an http or https URL"},
		"missing urlFile": {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n    urlFile: /nonexistent/url\n",
			"f.yaml:5: providers[0].urlFile: open /nonexistent/url"},
		"secret of slack": {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n    url: https://x.example/\n    secretFile: /nonexistent/k\n",
			"f.yaml:6: providers[0].secretFile: only a webhook provider is signed"},
		"route to nothing": {"version: v0.1\nroutes:\n  - provider: nobody\n", "f.yaml:3: routes[0].provider: \"nobody\" is no provider"},
		"bad reason": {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n    url: https://x.example/\nroutes:\n  - provider: a\n    reasons:\n      - SyncFailed\n      - SyncBroke\n",
			"f.yaml:10: routes[0].reasons: unknown reason \"SyncBroke\""},
		"bad severity": {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n    url: https://x.example/\nroutes:\n  - provider: a\n    severities: [critical]\n",
			"f.yaml:8: routes[0].severities: \"critical\" is not info, warning or error"},
		"empty team": {"version: v0.1\nproviders:\n  - name: a\n    type: slack\n    url: https://x.example/\nroutes:\n  - provider: a\n    teams: [\"\"]\n",
			"f.yaml:8: routes[0].teams[0]: empty"},
		"bad repeat": {"version: v0.1\nrepeatInterval: 4 hours\n", "f.yaml:2: repeatInterval: \"4 hours\" is not a duration"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig("f.yaml", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRETPATH") {
				t.Errorf("the error shows the URL: %v", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
