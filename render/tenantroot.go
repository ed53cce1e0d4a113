package render

import "strings"

// TenantRoot returns the tenant directory that holds dir (slash-separated, relative to the
// root): the prefix of dir that the first matching namespace rule matched before its `**`
// (the whole pattern when it has none), and the namespace the rule maps it to. For the rule
// teams/*/** and the directory teams/alice/x, the root is teams/alice. ok is false when no
// rule maps dir: it is an admin directory.
func (c *Config) TenantRoot(dir string) (root, namespace string, ok bool) {
	namespace, ok = c.NamespaceFor(dir)
	if !ok {
		return "", "", false
	}
	segs := splitPath(dir)
	for _, r := range c.Namespaces {
		pattern := splitPath(r.Path)
		if _, match := matchDir(pattern, segs); !match {
			continue
		}
		n := len(pattern)
		for i, p := range pattern {
			if p == "**" {
				n = i
				break
			}
		}
		return strings.Join(segs[:min(n, len(segs))], "/"), namespace, true
	}
	return "", namespace, true
}
