package reconciler

import (
	"path"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A scoped plan (Options.Scope) is the plan of a path below the repository root, e.g.
// `gpuctl diff teams/alice`: what the path's files declare is planned as always, but the plan
// takes away only what those files declared before. Objects declared elsewhere in the
// repository are not rendered, so without a scope they would all look removed.
//
// What lies in a scope is told by the annotation keys.Source (repository-relative, written by
// the renderer): an inventory member is a prune candidate only when its source lies in the
// scope. Objects without a source (the PriorityClasses) or declared by the configuration
// (.gpuctl.yaml: each tenant's ServiceAccount and RoleBinding gpuctl-tenant) lie in no scope:
// they are rendered with every path, so they are planned (applied, kept) and never pruned by a
// scoped plan. Nodes are not inventory members; a scoped plan removes gpuctl's labels only
// from nodes whose pool (label keys.Pool) is declared in the scope — by a pool file there now,
// or by one there that was removed (its registry ConfigMap, a member, names the pool).

// keepDeclaredElsewhere leaves alone, in a scoped plan, the existing objects declared outside
// the scope (by the configuration: the admission policy's binding lists every tenant
// namespace, and a path's render knows only its own): they are created when missing, never
// changed; a plan of the whole repository updates them.
func (m *Manager) keepDeclaredElsewhere(changes []*Change) {
	if len(m.opts.Scope) == 0 {
		return
	}
	for _, c := range changes {
		src := c.Source
		if c.Error != "" || src == "" || m.inScope(src) || (c.Action != ActionUpdate && c.Action != ActionRecreate) {
			continue
		}
		c.Action, c.Reason = ActionSkipped, "declared outside the scope ("+src+"): a plan of the whole repository updates it"
		c.Diff, c.Conflicts, c.Predicted, c.TakeBack = nil, nil, nil, nil
	}
}

// normalizeScope cleans scope entries: slash-separated, relative, without "./"; a trailing
// slash (a directory, as the CLI writes it) is kept for display. An entry naming the root
// ("", ".", "/") makes the scope the whole repository: nil.
func normalizeScope(entries []string) []string {
	var out []string
	for _, e := range entries {
		dir := strings.HasSuffix(e, "/")
		e = strings.TrimPrefix(path.Clean("/"+strings.ReplaceAll(e, "\\", "/")), "/")
		if e == "" {
			return nil
		}
		if dir {
			e += "/"
		}
		out = append(out, e)
	}
	return out
}

// inScope reports whether an object declared in source lies in the plan's scope: always when
// the plan is not scoped; else when source is a scope entry or lies below one.
func (m *Manager) inScope(source string) bool {
	if len(m.opts.Scope) == 0 {
		return true
	}
	for _, s := range m.opts.Scope {
		s = strings.TrimSuffix(s, "/")
		if source == s || strings.HasPrefix(source, s+"/") {
			return true
		}
	}
	return false
}

// scopedPools returns the pools whose nodes the plan may relabel: nil (every pool) when the
// plan is not scoped; else the pools that the desired node intents and pool registry
// ConfigMaps name, and those of registry ConfigMaps in the inventory declared in the scope.
func (m *Manager) scopedPools(intents []*unstructured.Unstructured, changes []*Change, live map[string]*unstructured.Unstructured) map[string]bool {
	if len(m.opts.Scope) == 0 {
		return nil
	}
	pools := map[string]bool{}
	for _, in := range intents {
		pools[in.GetLabels()[keys.Pool]] = true
	}
	registry := func(u *unstructured.Unstructured) {
		if u != nil && render.IsPoolRegistryObject(u) && m.inScope(object.AnnotationOf(u, keys.Source)) {
			pools[u.GetLabels()[keys.Pool]] = true
		}
	}
	for _, c := range changes {
		registry(c.Desired)
	}
	for _, u := range live {
		registry(u)
	}
	delete(pools, "")
	return pools
}

// scopeNote is the plan's note of its scope.
func scopeNote(scope []string) string {
	return "scoped to " + strings.Join(scope, ", ") +
		": objects declared elsewhere are not pruned, and nodes keep the labels of pools declared elsewhere"
}
