package render_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

// Test-only recipients of secrets/sops/testdata (README.md there).
const (
	aliceRecipient = "age1tvkft5ntwk4vc33hw8ldkeas6r8ckpltqh9czcxk5m5970lh5vxswa92qp"
	adminRecipient = "age1jwl9qmps788lqmavuj9r79s98dddy6uaxt8q8n6s6mapfkvj9y4qq07swe"
)

func TestSecretRecipients(t *testing.T) {
	cfg := parseConfig(t, "secrets:\n  admin: ["+adminRecipient+"]\n  teams:\n    alice: ["+aliceRecipient+", "+adminRecipient+"]\n    bob: []\n")
	got, err := cfg.SecretRecipientsFor("alice")
	if err != nil || !slices.Equal(got, []string{aliceRecipient, adminRecipient}) {
		t.Errorf("SecretRecipientsFor(alice) = %q, %v; want alice's, then the admin's once", got, err)
	}
	for team, field := range map[string]string{"bob": "secrets.teams.bob", "carol": "secrets.teams.carol"} {
		_, err := cfg.SecretRecipientsFor(team)
		var nr *render.NoRecipientsError
		if !errors.As(err, &nr) || nr.Field != field || !strings.Contains(err.Error(), field+" of .gpuctl.yaml lists no age recipient") {
			t.Errorf("SecretRecipientsFor(%s) = %v; want a NoRecipientsError naming %s", team, err, field)
		}
	}
	noAdmin := parseConfig(t, "secrets:\n  teams:\n    alice: ["+aliceRecipient+"]\n")
	if _, err := noAdmin.SecretRecipientsFor("alice"); err == nil || !strings.Contains(err.Error(), "secrets.admin of") {
		t.Errorf("without admin recipients: %v; want an error naming secrets.admin", err)
	}

	const privateKey = "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"
	bad := map[string]string{
		"secrets:\n  admin: [age1nope]\n":                                 `.gpuctl.yaml:2:11: secrets.admin[0]: "age1nope" is not a valid age1… recipient`,
		"secrets:\n  teams:\n    alice: [x, " + aliceRecipient + "]\n":    `.gpuctl.yaml:3:13: secrets.teams.alice[0]: not an age recipient (age1…)`,
		"secrets:\n  teams:\n    alice: [" + privateKey + "]\n":           `.gpuctl.yaml:3:13: secrets.teams.alice[0]: a private key, not a recipient: never commit it`,
		"secrets:\n  teams:\n    kube-system: [" + aliceRecipient + "]\n": `.gpuctl.yaml:3:5: secrets.teams.kube-system: tenancy reserved-namespace: team "kube-system" is reserved`,
		"secrets:\n  teams:\n    Alice: [" + aliceRecipient + "]\n":       `.gpuctl.yaml:3:5: secrets.teams.Alice: team "Alice" is not a valid namespace name`,
		"secrets:\n  teams: [alice]\n":                                    `.gpuctl.yaml:2:10: secrets.teams: expected a mapping of names, got a list`,
		"secrets:\n  admins: []\n":                                        `.gpuctl.yaml:2:3: secrets.admins: unknown field "admins", did you mean "admin"?`,
	}
	for text, want := range bad {
		_, diags := render.ParseConfig(".gpuctl.yaml", []byte(text))
		var got []string
		for _, d := range diags {
			got = append(got, d.Error())
		}
		joined := strings.Join(got, "\n")
		if !strings.Contains(joined, want) {
			t.Errorf("ParseConfig(%q):\n got %q\nwant %q", text, got, want)
		}
		if strings.Contains(joined, privateKey) {
			t.Errorf("ParseConfig(%q) echoes the private key: %q", text, got)
		}
	}
}
