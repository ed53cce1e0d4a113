package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/secrets/sops"
)

// SecretRecipients is the secrets: section of .gpuctl.yaml: the public age recipients (age1…)
// that `gpuctl secret create` encrypts for. A team's Secret is encrypted for the team's
// recipients and the admin's, so that the team's key alone decrypts it where it is applied
// and the admin can rotate it.
type SecretRecipients struct {
	// Admin are the admin's recipients: every team's file is encrypted for them too.
	Admin []string `gpuctl:"admin"`
	// Teams are each team's (namespace's) recipients.
	Teams []TeamRecipients `gpuctl:"teams"`
}

// TeamRecipients is one entry of SecretRecipients.Teams: a team and its recipients.
type TeamRecipients struct {
	Team       string   `gpuctl:",key"`
	Recipients []string `gpuctl:",value"`
}

// checkSecrets validates secrets:: each recipient an age1… (or age1pq1…) public key, each team
// a namespace that a tenant directory may map to.
func (c *Config) checkSecrets(name string, pos map[string]Pos, ds *diagnostics) {
	checkList := func(field string, list []string) {
		for i, r := range list {
			f := field + "[" + strconv.Itoa(i) + "]"
			if _, err := sops.ParseRecipients([]string{r}); err != nil {
				msg := strings.TrimPrefix(err.Error(), "age recipient 1: ")
				diag := ds.errorf(name, pos[f], f, "%s", msg)
				if strings.HasPrefix(strings.TrimSpace(strings.ToUpper(r)), "AGE-SECRET-KEY-") {
					diag.Message = "a private key, not a recipient: never commit it; give its public key (age-keygen -y KEYFILE)"
				}
			}
		}
	}
	checkList("secrets.admin", c.Secrets.Admin)
	for _, t := range c.Secrets.Teams {
		field := "secrets.teams." + t.Team
		if rule, problem := c.namespaceProblem(t.Team); problem != "" {
			msg := fmt.Sprintf("team %q is %s", t.Team, problem)
			if rule != "" {
				msg = tenancyProblem(rule, "%s", msg)
			}
			ds.errorf(name, pos[field], field, "%s", msg)
			continue
		}
		checkList(field, t.Recipients)
	}
}

// NoRecipientsError is a Secret to encrypt for a team that secrets: of .gpuctl.yaml gives
// no recipient (or no admin recipient).
type NoRecipientsError struct {
	// Field is the field to add: secrets.teams.<team> or secrets.admin.
	Field string
}

// Error names the field to add.
func (e *NoRecipientsError) Error() string {
	return fmt.Sprintf("%s of %s lists no age recipient: add the public key (age1…, age-keygen -y KEYFILE) there (docs/secrets.md)", e.Field, keys.ConfigFile)
}

// SecretRecipientsFor returns the recipients that a Secret of team is encrypted for: the
// team's, then the admin's (without repeats). It is a *NoRecipientsError when secrets: lists
// none for the team or none for the admin.
func (c *Config) SecretRecipientsFor(team string) ([]string, error) {
	var own []string
	if c != nil {
		for _, t := range c.Secrets.Teams {
			if t.Team == team {
				own = t.Recipients
			}
		}
	}
	if len(own) == 0 {
		return nil, &NoRecipientsError{Field: "secrets.teams." + team}
	}
	if len(c.Secrets.Admin) == 0 {
		return nil, &NoRecipientsError{Field: "secrets.admin"}
	}
	out := slices.Clone(own)
	for _, r := range c.Secrets.Admin {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}
