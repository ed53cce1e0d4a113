package render

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/repopath"
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

// DefaultDir returns the directory (slash-separated, relative to the root; "" for the root)
// where a write puts a file whose workloads land in namespace default, kind being the gpuctl
// kind of its first workload: defaultNamespaceDir, else the directory named after the kind
// (training, inference, notebook, compute), as examples/ keeps such files. The error says why
// there is none: no kind and no defaultNamespaceDir, or a directory that a namespace rule maps
// (its files would land in that namespace, not in default).
func (c *Config) DefaultDir(kind string) (string, error) {
	dir := kind
	if c != nil && c.DefaultNamespaceDir != "" {
		dir = strings.TrimSuffix(c.DefaultNamespaceDir, "/")
	}
	if dir == "" {
		return "", fmt.Errorf("no directory for namespace %s: the file has no workload to name one after, and %s sets no defaultNamespaceDir",
			keys.DefaultNamespace, keys.ConfigFile)
	}
	if ns, mapped := c.NamespaceFor(dir); mapped {
		return "", fmt.Errorf("the directory of namespace %s, %s/, is mapped to namespace %q by the namespace rules: "+
			"set defaultNamespaceDir in %s to a directory that no rule maps", keys.DefaultNamespace, dir, ns, keys.ConfigFile)
	}
	if dir == "." {
		return "", nil
	}
	return dir, nil
}

// checkDefaultDir validates defaultNamespaceDir: a clean relative directory that a write may
// name, which no namespace rule maps.
func (c *Config) checkDefaultDir(name string, pos map[string]Pos, ds *diagnostics) {
	const field = "defaultNamespaceDir"
	raw := c.DefaultNamespaceDir
	if raw == "" {
		return
	}
	dir := strings.TrimSuffix(raw, "/")
	switch {
	case dir == "" || path.IsAbs(dir) || path.Clean(dir) != dir || strings.HasPrefix(dir, "../") || dir == "..":
		ds.errorf(name, pos[field], field, "%q must be a clean directory relative to the root, without ..", raw)
		return
	case dir != ".":
		if err := repopath.Check(dir); err != nil {
			ds.errorf(name, pos[field], field, "%s", err)
			return
		}
	}
	if ns, mapped := c.NamespaceFor(dir); mapped {
		ds.errorf(name, pos[field], field, "%q is mapped to namespace %q by the namespace rules: its files would land there, not in %s",
			raw, ns, keys.DefaultNamespace).Hint = "name a directory that no rule of namespaces maps, e.g. jobs"
	}
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
