package render

import (
	"bytes"
	"path/filepath"
	"sort"

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

// renderKustomized renders the gpuctl files below kustomization directories, once for every
// kustomization built: absolute path -> the YAML that kustomize reads in their place.
func (st *run) renderKustomized() map[string][]byte {
	files := map[string][]byte{}
	for _, s := range st.sources {
		if !s.kustom {
			continue
		}
		var buf bytes.Buffer
		for _, doc := range s.docs {
			for _, o := range st.renderDoc(doc, s) {
				b, _ := sigsyaml.Marshal(o.Object) // cannot fail: maps of JSON values
				buf.WriteString("---\n")
				buf.Write(b)
			}
		}
		files[s.abs] = buf.Bytes()
	}
	return files
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
	rm, err := k.Run(renderedFS{FileSystem: st.fsys, files: files}, dir)
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
	st.checkNamespaces(display, filepath.ToSlash(relTo(st.repo, dir)), maps)
	out := make([]*unstructured.Unstructured, len(maps))
	for i, m := range maps {
		out[i] = &unstructured.Unstructured{Object: m}
	}
	return out
}

// displayOf names an absolute path the way the user named the rendered path.
func (st *run) displayOf(abs string) string {
	if st.argDir == "" {
		return abs
	}
	return filepath.Join(st.argDir, relTo(st.argAbs, abs))
}
