package render

import (
	"context"
	"errors"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// A render with Options.Hold confines a tenant directory's errors to its team: Flux confines a
// failure to its Kustomization, gpuctl to the namespace a tenant directory maps to. When every
// error of a revision lies in tenant directories, the revision is rendered again without the
// files of those directories' namespaces — they are held — and the result holds every other
// scope's objects, with the held namespaces and their errors in Result.Held. An error anywhere
// else (an admin's directory, .gpuctl.yaml, a file whose directory no rule maps) holds
// everything: the render fails as without Hold, since admin files change every team.
//
// A held namespace keeps what the render gives each tenant namespace from the admin's side:
// its identity (ServiceAccount and RoleBinding gpuctl-tenant) and its place in the admission
// policy. Its own objects are not rendered at all: the engine keeps the live ones as the last
// good revision left them (reconciler.Manager.PlanRender), nothing of them applied, changed or
// pruned.

// HeldScope is a tenant namespace whose files have errors, and those errors.
type HeldScope struct {
	// Namespace is the tenant namespace (the scope).
	Namespace string `json:"namespace"`
	// Errors are the errors of its files, in file and line order.
	Errors []*Diagnostic `json:"errors"`
}

// HeldNamespaces returns the namespaces of held, in order.
func HeldNamespaces(held []HeldScope) []string {
	out := make([]string, len(held))
	for i, h := range held {
		out[i] = h.Namespace
	}
	return out
}

// renderHolding is render with Options.Hold: it renders again, without the namespaces whose
// files have errors, until no error is left or one lies outside a tenant directory. Each
// round holds at least one more namespace, so it ends.
func (r *Renderer) renderHolding(ctx context.Context, fsys filesys.FileSystem, path string, st *run) (*Result, error) {
	res, err := r.render(st, path)
	var held map[string][]*Diagnostic
	for {
		var ve *ValidationError
		if !errors.As(err, &ve) || res == nil {
			break
		}
		scopes, ok := st.errorScopes(res.Errors())
		if !ok {
			return res, err // an admin's error holds everything
		}
		if held == nil {
			held = map[string][]*Diagnostic{}
		}
		grew := false
		for ns, diags := range scopes {
			grew = grew || held[ns] == nil
			held[ns] = append(held[ns], diags...)
		}
		if !grew { // cannot happen: a held namespace's files are not read again
			return res, err
		}
		st = r.newRun(ctx, fsys)
		st.held = make(map[string]bool, len(held))
		for ns := range held {
			st.held[ns] = true
		}
		res, err = r.render(st, path)
	}
	if res != nil && err == nil {
		for ns, diags := range held {
			res.Held = append(res.Held, HeldScope{Namespace: ns, Errors: diags})
		}
		slices.SortFunc(res.Held, func(a, b HeldScope) int { return strings.Compare(a.Namespace, b.Namespace) })
	}
	return res, err
}

// errorScopes sorts errors by the tenant namespace of the file each names; ok is false when
// one lies outside every tenant directory (or names no file).
func (st *run) errorScopes(errs []*Diagnostic) (scopes map[string][]*Diagnostic, ok bool) {
	scopes = map[string][]*Diagnostic{}
	for _, d := range errs {
		ns, tenant := st.diagnosticScope(d.File)
		if !tenant {
			return nil, false
		}
		scopes[ns] = append(scopes[ns], d)
	}
	return scopes, true
}

// diagnosticScope is the tenant namespace of the file or directory that a diagnostic names (as
// displayed: below the rendered path as the caller named it, or relative to the repository
// for a kustomization's directory); tenant is false outside tenant directories.
func (st *run) diagnosticScope(display string) (ns string, tenant bool) {
	if display == "" {
		return "", false
	}
	rel := ""
	for _, s := range st.sources {
		if s.display == display {
			rel = s.rel
			break
		}
	}
	if rel == "" {
		abs := filepath.Join(st.repo, display)
		if r := relTo(st.argDir, display); filepath.IsAbs(display) == filepath.IsAbs(st.argDir) && filepath.IsLocal(r) {
			abs = filepath.Join(st.argAbs, r)
		}
		rel = filepath.ToSlash(relTo(st.repo, abs))
		if !filepath.IsLocal(rel) {
			return "", false
		}
		if st.fsys.IsDir(abs) { // a kustomization's directory
			rel = path.Join(rel, "kustomization.yaml")
		}
	}
	return st.namespaceFor(path.Dir(rel))
}

// heldFile reports whether the file at rel (relative to the repository) lies in a tenant
// directory of a held namespace: the render does not read it.
func (st *run) heldFile(rel string) bool {
	if len(st.held) == 0 {
		return false
	}
	ns, tenant := st.namespaceFor(path.Dir(rel))
	return tenant && st.held[ns]
}

// keepHeldTenants records the held namespaces that .gpuctl.yaml may map as tenant namespaces:
// their identity and their place in the admission policy stay while their files are held.
func (st *run) keepHeldTenants() {
	for ns := range st.held {
		if _, problem := st.cfg.namespaceProblem(ns); problem == "" {
			st.tenants[ns] = true
		}
	}
}
