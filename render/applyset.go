package render

import (
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"go.yaml.in/yaml/v3"
)

// applySetProblem is why a file may not write an ApplySet key: the reconciler writes them
// (the part-of label on every member, the parent's id, tooling and contents), and one written
// by a file would claim the object for another tool's ApplySet, or make a ConfigMap pass for a
// parent, before the reconciler silently overwrote it.
const applySetProblem = "applyset.kubernetes.io/ keys are ApplySet bookkeeping that gpuctl writes itself: " +
	"a file may not set them (it would claim or join another tool's ApplySet)"

// applySetFields returns the field paths (metadata.labels[key], then metadata.annotations[key])
// of the ApplySet labels and annotations of an object, sorted.
func applySetFields(obj map[string]any) []string {
	meta := mapAt(obj["metadata"])
	var out []string
	for _, part := range []string{"labels", "annotations"} {
		var found []string
		for k := range mapAt(meta[part]) {
			if strings.HasPrefix(strings.ToLower(k), keys.ApplySetPrefix) {
				found = append(found, k)
			}
		}
		sort.Strings(found)
		for _, k := range found {
			out = append(out, "metadata."+part+"["+k+"]")
		}
	}
	return out
}

// checkApplySetKeys refuses, at each key's line, the ApplySet labels and annotations of a
// plain manifest, in every directory. It reports whether there were any.
func (st *run) checkApplySetKeys(tc *tenancyCheck, doc *Document, s *source) bool {
	fields := applySetFields(doc.Manifest)
	for _, f := range fields {
		st.ds.errorf(doc.File, tc.fieldPos(s, doc, f), f, "%s", applySetProblem)
	}
	return len(fields) > 0
}

// checkApplySetOutput refuses the ApplySet labels and annotations that a kustomization added
// (labels, commonAnnotations, a patch) to what it built, at the line of the kustomization
// that writes the key when it does so itself (display names the kustomization file kfile).
func (st *run) checkApplySetOutput(kfile, display string, objs []map[string]any) {
	var doc *yaml.Node
	for _, o := range objs {
		fields := applySetFields(o)
		if len(fields) > 0 && doc == nil {
			doc = &yaml.Node{}
			if data, err := st.fsys.ReadFile(kfile); err == nil {
				_ = yaml.Unmarshal(data, doc) // a kustomization that kustomize read
			}
		}
		for _, f := range fields {
			key := f[strings.IndexByte(f, '[')+1 : len(f)-1]
			st.ds.errorf(display, keyPos(doc, key), f, "kustomize output %s %s: %s", o["kind"], mapAt(o["metadata"])["name"], applySetProblem)
		}
	}
}

// keyPos returns the position of the first mapping key named key anywhere in a YAML tree, or
// the zero Pos.
func keyPos(n *yaml.Node, key string) Pos {
	if n == nil {
		return Pos{}
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return posOf(n.Content[i])
			}
		}
	}
	for _, c := range n.Content {
		if p := keyPos(c, key); p.Line > 0 {
			return p
		}
	}
	return Pos{}
}
