package render

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// The teams of .gpuctl.yaml: who belongs to which team, and which directory a team's files go
// to. `gpuctl create` places a new file there; rendering never reads them.

// checkTeams validates teams: each key a person's e-mail address (as Git's user.email), each
// value a team, i.e. a namespace that a tenant directory may map to.
func (c *Config) checkTeams(name string, pos map[string]Pos, ds *diagnostics) {
	seen := map[string]string{}
	for _, m := range c.Teams {
		field := "teams." + m.Email
		if local, domain, ok := strings.Cut(m.Email, "@"); !ok || local == "" || domain == "" || strings.ContainsAny(m.Email, " \t\n") {
			ds.errorf(name, pos[field], field, "%q is not an e-mail address", m.Email).Hint = "write the address of Git's user.email: alice@example.com: alice"
			continue
		}
		if first, dup := seen[strings.ToLower(m.Email)]; dup {
			ds.errorf(name, pos[field], field, "%q is also listed as %q; e-mail addresses are compared in any case", m.Email, first)
			continue
		}
		seen[strings.ToLower(m.Email)] = m.Email
		if m.Team == "" {
			continue // reported by the decoder
		}
		if rule, problem := c.namespaceProblem(m.Team); problem != "" {
			msg := fmt.Sprintf("team %q is %s", m.Team, problem)
			if rule != "" {
				msg = tenancyProblem(rule, "%s", msg)
			}
			ds.errorf(name, pos[field], field, "%s", msg)
		}
	}
}

// TeamOf returns the team of a person by their e-mail address (any case), and whether teams
// lists them.
func (c *Config) TeamOf(email string) (string, bool) {
	if c == nil {
		return "", false
	}
	for _, m := range c.Teams {
		if strings.EqualFold(m.Email, email) && email != "" {
			return m.Team, true
		}
	}
	return "", false
}

// TeamDir returns the directory (slash-separated, relative to the root) of a team: the
// namespace rules inverted. Rules are tried in order; a rule gives a directory when its
// namespace template matches team (teams/*/** with $1 gives teams/alice for alice) and its
// wildcards can all be filled in; the directory counts only when the rules, read forwards,
// map it to team (NamespaceFor), so a rule that an earlier one shadows gives nothing. ok is
// false when no rule gives one, or team is not a valid namespace.
func (c *Config) TeamDir(team string) (dir string, ok bool) {
	if c == nil {
		return "", false
	}
	if _, problem := c.namespaceProblem(team); problem != "" {
		return "", false
	}
	for _, r := range c.Namespaces {
		caps, ok := solveTemplate(r.Namespace, team)
		if !ok {
			continue
		}
		if d, ok := fillPattern(splitPath(r.Path), caps); ok {
			if ns, mapped := c.NamespaceFor(d); mapped && ns == team {
				return d, true
			}
		}
	}
	return "", false
}

// templateRef matches a reference $1..$9 in a namespace template.
var templateRef = regexp.MustCompile(`\$[1-9]`)

// solveTemplate finds the values of a namespace template's references ($1..$9) that make it
// equal to ns: teams-$1 and teams-alice give {1: alice}.
func solveTemplate(template, ns string) (map[int]string, bool) {
	refs := templateRef.FindAllStringIndex(template, -1)
	var re strings.Builder
	re.WriteString("^")
	last := 0
	for _, r := range refs {
		re.WriteString(regexp.QuoteMeta(template[last:r[0]]))
		re.WriteString("(.+?)")
		last = r[1]
	}
	re.WriteString(regexp.QuoteMeta(template[last:]) + "$")
	m := regexp.MustCompile(re.String()).FindStringSubmatch(ns)
	if m == nil {
		return nil, false
	}
	caps := map[int]string{}
	for i, r := range refs {
		n, _ := strconv.Atoi(template[r[0]+1 : r[1]])
		if prev, seen := caps[n]; seen && prev != m[i+1] {
			return nil, false
		}
		caps[n] = m[i+1]
	}
	return caps, true
}

// fillPattern writes the directory that a pattern matches with its wildcard segments set to
// caps (the n-th wildcard segment to caps[n]); it stops at **. ok is false when a wildcard
// has no value, or its value does not match it.
func fillPattern(pattern []string, caps map[int]string) (string, bool) {
	var dir []string
	n := 0
	for _, seg := range pattern {
		if seg == "**" {
			break
		}
		if !strings.ContainsAny(seg, "*?[") {
			dir = append(dir, seg)
			continue
		}
		n++
		v, ok := caps[n]
		if !ok || strings.Contains(v, "/") {
			return "", false
		}
		if m, err := path.Match(seg, v); err != nil || !m {
			return "", false
		}
		dir = append(dir, v)
	}
	return strings.Join(dir, "/"), true
}
