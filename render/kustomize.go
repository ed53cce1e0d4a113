package render

import (
	"bytes"
	"encoding/json"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// renderedFS shows kustomize the rendered Kubernetes YAML in place of each gpuctl file, so a
// kustomization lists gpuctl files as resources and overlays patch what they render to.
type renderedFS struct {
	filesys.FileSystem
	files map[string][]byte // absolute path -> rendered YAML
}

// ReadFile returns the rendered form of gpuctl files and the bytes of every other file.
func (f renderedFS) ReadFile(p string) ([]byte, error) {
	if abs, err := filepath.Abs(p); err == nil {
		if b, ok := f.files[abs]; ok {
			return b, nil
		}
	}
	return f.FileSystem.ReadFile(p)
}

// kustomizationFile returns the kustomization file of a directory.
func (st *run) kustomizationFile(dir string) string {
	for _, k := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if f := filepath.Join(dir, k); st.fsys.Exists(f) {
			return f
		}
	}
	return filepath.Join(dir, "kustomization.yaml")
}

// topKustomizations returns the kustomization directories that no other one of the same scope
// refers to: each is built on its own.
func (st *run) topKustomizations() []string {
	referenced := st.sameScopeRefs()
	var top []string
	for _, k := range st.kdirs {
		if !referenced[k] {
			top = append(top, k)
		}
	}
	sort.Strings(top)
	return top
}

// renderKustomized renders the gpuctl files and plain manifests below kustomization
// directories, once for every kustomization built: absolute path -> the YAML that kustomize
// reads in their place. Each object carries the source annotation of its file, which patches
// keep. Kustomize's inputs (patch files, ...) are not in the map: kustomize reads them as they
// are. Kustomizations with generators are shown with a generator option that annotates what
// they generate with their own path.
func (st *run) renderKustomized() map[string][]byte {
	files := map[string][]byte{}
	for _, k := range st.kdirs {
		kfile := st.kustomizationFile(k)
		if data, err := st.fsys.ReadFile(kfile); err == nil {
			if b, ok := withGeneratorSource(data, filepath.ToSlash(relTo(st.repo, kfile))); ok {
				files[kfile] = b
			}
		}
	}
	for _, s := range st.sources {
		if !s.kustom {
			continue
		}
		if s.input {
			if b, ok := st.tenantPatch(s); ok {
				files[s.abs] = b
			}
			continue
		}
		var buf bytes.Buffer
		for i := range s.docs {
			for _, o := range st.renderCached(s, i, "") {
				st.bodies.keepWhole(o)             // kustomize's input: whole
				b, _ := sigsyaml.Marshal(o.Object) // cannot fail: maps of JSON values
				buf.WriteString("---\n")
				buf.Write(b)
			}
		}
		files[s.abs] = buf.Bytes()
	}
	return files
}

// tenantPatch returns a kustomize input of a tenant directory that holds objects (a
// strategic-merge patch) with the tenant's namespace on each object that names none, as the
// objects it patches carry it: every file of a tenant directory belongs to its namespace.
// Other inputs (JSON patches, generator files) are read by kustomize as they are written.
func (st *run) tenantPatch(s *source) ([]byte, bool) {
	ns, ok := st.namespaceFor(path.Dir(s.rel))
	if !ok {
		return nil, false
	}
	data, err := st.fsys.ReadFile(s.abs)
	if err != nil {
		return nil, false
	}
	var ds diagnostics
	docs := parseFile(s.display, data, &ds)
	if ds.hasErrors() || len(docs) == 0 {
		return nil, false
	}
	var buf bytes.Buffer
	for _, d := range docs {
		if d.Manifest == nil {
			return nil, false
		}
		if meta := mapAt(d.Manifest["metadata"]); meta["namespace"] == nil || meta["namespace"] == "" {
			meta["namespace"] = ns
		}
		b, _ := sigsyaml.Marshal(d.Manifest) // cannot fail: maps of JSON values
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes(), true
}

// kustomizeOptions are kustomize's defaults, spelled out because each one holds a line:
// files load only from below each kustomization's directory, plugins other than the
// built-in ones are off and Helm is off (the built-in Helm generator runs a helm binary).
func kustomizeOptions() *krusty.Options {
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.PluginConfig.HelmConfig.Enabled = false
	return opts
}

// kustomize builds one kustomization directory over the rendered gpuctl files.
func (st *run) kustomize(dir string, files map[string][]byte) []*unstructured.Unstructured {
	if st.stopped() {
		return nil
	}
	kfile := st.kustomizationFile(dir)
	display := st.kdisplay(kfile)
	k := krusty.MakeKustomizer(kustomizeOptions())
	done := st.doing("building the kustomization %s", display)
	quiet := kustomizeStderr.begin()
	rm, err := k.Run(renderedFS{FileSystem: st.fsys, files: files}, dir)
	quiet()
	done()
	if err != nil {
		st.ds.errorf(display, Pos{}, "", "kustomize build: %s", redactMessage(err.Error()))
		return nil
	}
	maps := make([]map[string]any, 0, rm.Size())
	for _, r := range rm.Resources() {
		// Through JSON, so that numbers are int64 or float64 as unstructured objects need.
		var m map[string]any
		js, err := r.MarshalJSON()
		if err == nil {
			err = k8sjson.Unmarshal(js, &m)
		}
		if err != nil {
			st.ds.errorf(display, Pos{}, "", "kustomize output: %s", redactMessage(err.Error()))
			continue
		}
		maps = append(maps, m)
	}
	st.checkApplySetOutput(kfile, display, maps)
	st.fixSources(maps, dir)
	st.checkNamespaces(display, filepath.ToSlash(relTo(st.repo, dir)), maps)
	out := make([]*unstructured.Unstructured, len(maps))
	for i, m := range maps {
		out[i] = &unstructured.Unstructured{Object: m}
	}
	return out
}

// fixSources makes the source annotation of every object that the kustomization in dir built
// name a file of the tree that it may read: the gpuctl file or plain manifest the object came
// from, or the kustomization that generated it. A value that a patch or commonAnnotations
// wrote, or none, becomes the kustomization built.
func (st *run) fixSources(objs []map[string]any, dir string) {
	scope := st.scopeOf(dir)
	known := map[string]bool{}
	for _, s := range st.sources {
		if s.kustom && !s.input && scope.contains(s.abs) {
			known[s.rel] = true
		}
	}
	for _, k := range st.kdirs {
		if f := st.kustomizationFile(k); scope.contains(f) {
			known[filepath.ToSlash(relTo(st.repo, f))] = true
		}
	}
	kfile := filepath.ToSlash(relTo(st.repo, st.kustomizationFile(dir)))
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		ann := u.GetAnnotations()
		if known[ann[keys.Source]] {
			continue
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[keys.Source] = kfile
		u.SetAnnotations(ann)
	}
}

// withGeneratorSource returns a kustomization that has ConfigMap or Secret generators with
// the generator option that annotates what they generate with the source path, as JSON,
// which kustomize reads as it reads YAML (it converts YAML to JSON itself).
func withGeneratorSource(data []byte, path string) ([]byte, bool) {
	js, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil, false // kustomize reports it
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // numbers stay as written
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return nil, false
	}
	if !hasKeyFold(m, "configMapGenerator") && !hasKeyFold(m, "secretGenerator") {
		return nil, false
	}
	opts := keysFold(m, "generatorOptions")
	if len(opts) == 0 {
		opts = []string{"generatorOptions"}
	}
	for _, k := range opts {
		o, ok := m[k].(map[string]any)
		if !ok {
			o = map[string]any{}
			m[k] = o
		}
		anns := keysFold(o, "annotations")
		if len(anns) == 0 {
			anns = []string{"annotations"}
		}
		for _, a := range anns {
			ann, ok := o[a].(map[string]any)
			if !ok {
				ann = map[string]any{}
				o[a] = ann
			}
			ann[keys.Source] = path
		}
	}
	out, err := json.Marshal(m)
	return out, err == nil
}

// keysFold returns the keys of m equal to name without regard to case, as kustomize reads them.
func keysFold(m map[string]any, name string) []string {
	var out []string
	for k := range m {
		if strings.EqualFold(k, name) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func hasKeyFold(m map[string]any, name string) bool { return len(keysFold(m, name)) > 0 }

// displayOf names an absolute path the way the user named the rendered path.
func (st *run) displayOf(abs string) string {
	if st.argDir == "" {
		return abs
	}
	return filepath.Join(st.argDir, relTo(st.argAbs, abs))
}
