package render

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// refKind is what a kustomization field refers to.
type refKind int

const (
	refResource  refKind = iota // resources, bases: a file, or a directory with a kustomization
	refComponent                // components: a directory with a kustomization of kind Component
	refFile                     // patches, generator files, crds, configurations, openapi, replacements
	refPlugin                   // generators, transformers, validators: an inline configuration or a file
	refPatch                    // patchesStrategicMerge: an inline patch or a file
)

// kref is one path or URL that a kustomization reads, and where the kustomization says it.
type kref struct {
	field string // e.g. configMapGenerator[0].files[1]
	at    []any  // the keys and indexes of the value in the kustomization file
	value string // the reference as kustomize reads it (for generator files: after key=)
	raw   string // the value as written
	kind  refKind
}

// kustomizationRefs lists every reference of a kustomization (or a Component) in every field
// that kustomize reads a path or URL from, and the Helm fields, which are refused whole.
func kustomizationRefs(kz *types.Kustomization) (refs []kref, helm []kref) {
	list := func(field string, vals []string, kind refKind) {
		for i, v := range vals {
			refs = append(refs, kref{field: fmt.Sprintf("%s[%d]", field, i), at: []any{field, i}, value: v, raw: v, kind: kind})
		}
	}
	list("resources", kz.Resources, refResource)
	list("bases", kz.Bases, refResource) //nolint:staticcheck // deprecated, still read by kustomize
	list("components", kz.Components, refComponent)
	list("crds", kz.Crds, refFile)
	list("configurations", kz.Configurations, refFile)
	list("generators", kz.Generators, refPlugin)
	list("transformers", kz.Transformers, refPlugin)
	list("validators", kz.Validators, refPlugin)
	for i, p := range kz.PatchesStrategicMerge { //nolint:staticcheck // deprecated, still read by kustomize
		refs = append(refs, kref{field: fmt.Sprintf("patchesStrategicMerge[%d]", i), at: []any{"patchesStrategicMerge", i},
			value: string(p), raw: string(p), kind: refPatch})
	}
	patches := func(field string, ps []types.Patch) {
		for i, p := range ps {
			if p.Path != "" {
				refs = append(refs, kref{field: fmt.Sprintf("%s[%d].path", field, i), at: []any{field, i, "path"},
					value: p.Path, raw: p.Path, kind: refFile})
			}
		}
	}
	patches("patches", kz.Patches)
	patches("patchesJson6902", kz.PatchesJson6902) //nolint:staticcheck // deprecated, still read by kustomize
	for i, r := range kz.Replacements {
		if r.Path != "" {
			refs = append(refs, kref{field: fmt.Sprintf("replacements[%d].path", i), at: []any{"replacements", i, "path"},
				value: r.Path, raw: r.Path, kind: refFile})
		}
	}
	if p, ok := kz.OpenAPI["path"]; ok {
		refs = append(refs, kref{field: "openapi.path", at: []any{"openapi", "path"}, value: p, raw: p, kind: refFile})
	}
	for i, g := range kz.ConfigMapGenerator {
		refs = append(refs, generatorRefs("configMapGenerator", i, g.KvPairSources)...)
	}
	for i, g := range kz.SecretGenerator {
		refs = append(refs, generatorRefs("secretGenerator", i, g.KvPairSources)...)
	}
	if len(kz.HelmCharts) > 0 {
		helm = append(helm, kref{field: "helmCharts", at: []any{"helmCharts"}})
	}
	if kz.HelmGlobals != nil {
		helm = append(helm, kref{field: "helmGlobals", at: []any{"helmGlobals"}})
	}
	if len(kz.HelmChartInflationGenerator) > 0 {
		helm = append(helm, kref{field: "helmChartInflationGenerator", at: []any{"helmChartInflationGenerator"}})
	}
	return refs, helm
}

// generatorRefs lists the files and env files of one ConfigMap or Secret generator. A file
// source is [key=]path: kustomize reads the part after the first =.
func generatorRefs(field string, i int, kv types.KvPairSources) []kref {
	var refs []kref
	for j, f := range kv.FileSources {
		p := f
		if _, after, ok := strings.Cut(f, "="); ok {
			p = after
		}
		refs = append(refs, kref{field: fmt.Sprintf("%s[%d].files[%d]", field, i, j), at: []any{field, i, "files", j},
			value: p, raw: f, kind: refFile})
	}
	for j, e := range kv.EnvSources {
		refs = append(refs, kref{field: fmt.Sprintf("%s[%d].envs[%d]", field, i, j), at: []any{field, i, "envs", j},
			value: e, raw: e, kind: refFile})
	}
	if kv.EnvSource != "" {
		refs = append(refs, kref{field: fmt.Sprintf("%s[%d].env", field, i), at: []any{field, i, "env"},
			value: kv.EnvSource, raw: kv.EnvSource, kind: refFile})
	}
	return refs
}

// gitUser is the user@ that makes kustomize read a reference as a git repository (SCP style).
var gitUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// remote reports whether kustomize would read a reference from the network: a URL (any
// scheme), a git repository (git::, user@host:path, github.com/...), or anything with a colon
// or a query, which kustomize may read as one. It errs on the side of refusing.
func remote(v string) bool {
	lower := strings.ToLower(strings.TrimSpace(v))
	return strings.Contains(lower, "://") || strings.HasPrefix(lower, "git::") || gitUser.MatchString(lower) ||
		strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "github.com:") ||
		strings.ContainsAny(lower, ":?")
}

// inline reports whether a patch or plugin entry is written in place rather than naming a
// file. kustomize tries the text as objects first; an object has a kind, so an entry is inline
// when it is YAML whose documents are mappings with a kind. Anything else is checked as a path.
func inline(v string) bool {
	nodes, err := decodeAll([]byte(v))
	if err != nil || len(nodes) == 0 {
		return false
	}
	for _, n := range nodes {
		if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode || topLevel(n.Content[0], "kind") == nil {
			return false
		}
	}
	return true
}

// nodeAt finds the node at a path of keys and indexes; keys match without regard to case,
// as kustomize reads them, and the last of duplicate keys wins. It returns the deepest node
// found on the way, so a position is never lost.
func nodeAt(n *yaml.Node, at []any) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, step := range at {
		if n == nil {
			return nil
		}
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		var next *yaml.Node
		switch s := step.(type) {
		case string:
			for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
				if strings.EqualFold(n.Content[i].Value, s) {
					next = n.Content[i+1]
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && s < len(n.Content) {
				next = n.Content[s]
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}
