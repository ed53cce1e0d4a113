package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// kscope is where a kustomization may reach: a tenant's root directory, or anywhere (an
// admin directory).
type kscope struct {
	mapped    bool
	root      string // absolute tenant root
	real      string // and with symbolic links resolved
	display   string // relative to the repository, for messages
	namespace string
}

// scopeOf returns the scope of an absolute directory.
func (st *run) scopeOf(dir string) kscope {
	rel := filepath.ToSlash(relTo(st.repo, dir))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return kscope{} // outside the repository: only an admin's kustomization reaches there
	}
	inner, prefix := st.clusterRel(rel) // below clusters/NAME/, the rules match as at the root
	root, ns, ok := st.cfg.TenantRoot(inner)
	if !ok {
		return kscope{}
	}
	root = prefix + root
	abs := filepath.Join(st.repo, filepath.FromSlash(root))
	return kscope{mapped: true, root: abs, real: realPath(st.fsys, abs), display: root, namespace: ns}
}

// scopeKey names a scope: kustomizations of one scope may build each other.
func (s kscope) key() string {
	if !s.mapped {
		return ""
	}
	return "tenant:" + s.root
}

// holds reports whether a resolved path lies in the scope.
func (s kscope) holds(real string) bool {
	if !s.mapped {
		return true
	}
	return real == s.real || strings.HasPrefix(real, s.real+string(filepath.Separator))
}

// contains reports whether an absolute path, as written, lies in the scope.
func (s kscope) contains(abs string) bool {
	return !s.mapped || abs == s.root || strings.HasPrefix(abs, s.root+string(filepath.Separator))
}

// checkKustomizations reads every kustomization of the run, and every one they refer to, before
// anything is built, and refuses with file:line each reference that kustomize would read from
// the network, that does not exist, or that leaves the tenant directory it is written in. The
// renderer never fetches: kustomize reads URLs and clones git repositories on its own.
func (st *run) checkKustomizations() {
	for _, k := range st.kdirs {
		if st.stopped() {
			return
		}
		st.checkKustomization(k, st.scopeOf(k), map[string]bool{})
	}
}

// kcheck is the check of one kustomization file.
type kcheck struct {
	dir, file string // absolute directory; the file as displayed
	doc       *yaml.Node
	scopes    []kscope // the top kustomization's and this one's
}

// checkKustomization checks the kustomization in dir and those it refers to, all held to the
// scope of the top one (and each to its own).
func (st *run) checkKustomization(dir string, top kscope, seen map[string]bool) {
	if seen[dir] {
		return
	}
	seen[dir] = true
	kfile := st.kustomizationFile(dir)
	c := &kcheck{dir: dir, file: st.kdisplay(kfile), scopes: []kscope{top, st.scopeOf(dir)}}
	defer st.doing("checking the kustomization %s", c.file)()
	kz, ok := st.readKustomization(kfile, c)
	if !ok {
		return
	}
	st.warnDeprecated(c, kz)
	refs, helm := kustomizationRefs(kz)
	for _, h := range helm {
		st.ds.errorf(c.file, c.pos(h), h.field, "Helm charts are refused: gpuctl never runs helm or fetches charts").Hint =
			"render the chart (helm template) and commit its output"
	}
	for _, r := range refs {
		p, ok := st.checkRef(c, r)
		if !ok {
			continue
		}
		switch {
		case r.kind == refResource:
			st.kresources[p] = true
		case r.kind != refComponent:
			st.kinputs[p] = true
		}
		if (r.kind == refResource || r.kind == refComponent) && st.fsys.IsDir(p) && st.hasKustomization(p) {
			st.checkKustomization(p, top, seen)
		}
	}
}

// readKustomization reads and decodes a kustomization file as kustomize does.
func (st *run) readKustomization(kfile string, c *kcheck) (*types.Kustomization, bool) {
	if linked(st.fsys, kfile) {
		st.ds.errorf(c.file, Pos{}, "", "the kustomization file is a symbolic link, which is refused; commit the file itself")
		return nil, false
	}
	if problem := st.fileProblem(kfile); problem != "" {
		st.ds.errorf(c.file, Pos{}, "", "%s", problem)
		return nil, false
	}
	data, err := st.fsys.ReadFile(kfile)
	if err != nil {
		st.ds.errorf(c.file, Pos{}, "", "cannot read the kustomization file")
		return nil, false
	}
	if tooLarge(st.ds, c.file, int64(len(data))) {
		return nil, false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		syntaxError(c.file, err, st.ds, data)
		return nil, false
	}
	c.doc = &doc
	kz := &types.Kustomization{}
	if err := kz.Unmarshal(data); err != nil {
		st.ds.errorf(c.file, Pos{}, "", "not a valid kustomization: %s", redactMessage(strings.TrimPrefix(err.Error(), "invalid Kustomization: ")))
		return nil, false
	}
	return kz, true
}

// pos returns the position of a reference in the kustomization file.
func (c *kcheck) pos(r kref) Pos {
	if n := nodeAt(c.doc, r.at); n != nil {
		return posOf(n)
	}
	return Pos{}
}

// checkRef checks one reference and returns its path when it is local and allowed.
func (st *run) checkRef(c *kcheck, r kref) (string, bool) {
	errorf := func(format string, args ...any) *Diagnostic {
		return st.ds.errorf(c.file, c.pos(r), r.field, format, args...)
	}
	switch {
	case strings.TrimSpace(r.value) == "":
		return "", false // kustomize reports it
	case (r.kind == refPlugin || r.kind == refPatch) && inline(r.raw):
		if r.kind == refPlugin {
			st.checkPluginConfig(c, r, c.file, c.pos(r), r.field, []byte(r.raw))
		}
		return "", false
	case remote(r.raw) || remote(r.value):
		errorf("a remote reference (URL or git repository) is refused: gpuctl never uses the network while rendering").Hint =
			"copy what it points to into the repository and refer to it by a relative path"
		return "", false
	case filepath.IsAbs(r.value) || strings.HasPrefix(r.value, "~"):
		errorf("an absolute path is refused: kustomize references are relative to the kustomization's directory")
		return "", false
	}
	p := filepath.Join(c.dir, filepath.FromSlash(r.value))
	if !st.fsys.Exists(p) {
		errorf("the path does not exist in the repository")
		return "", false
	}
	real := realPath(st.fsys, p)
	for _, s := range c.scopes {
		if !s.holds(real) {
			errorf("the path leaves the team directory %s/ (namespace %q): a team's kustomization refers only to its own files", s.display, s.namespace).Hint =
				"copy the files into " + s.display + "/, or move the kustomization out of the team directories"
			return "", false
		}
	}
	isDir := st.fsys.IsDir(p)
	if !isDir {
		if problem := st.fileProblem(p); problem != "" {
			errorf("%s", problem)
			return "", false
		}
	}
	switch {
	case r.kind == refComponent && !isDir:
		errorf("a component must be a directory")
		return "", false
	case (r.kind == refPlugin || r.kind == refPatch) && isDir:
		errorf("a directory is refused here: list a file or write the configuration inline")
		return "", false
	case r.kind == refPlugin:
		if linked(st.fsys, p) {
			errorf("a symbolic link is refused here")
			return "", false
		}
		if data, err := st.fsys.ReadFile(p); err == nil && len(data) <= MaxFileSize {
			st.checkPluginConfig(c, r, st.kdisplay(p), Pos{}, "", data)
		}
	}
	return p, true
}

// checkPluginConfig refuses the built-in plugin configurations (generators, transformers,
// validators) that would fetch: any URL in any value, and the Helm generator. The files they
// name are checked as references of the kustomization r is written in.
func (st *run) checkPluginConfig(c *kcheck, r kref, file string, at Pos, field string, data []byte) {
	nodes, err := decodeAll(data)
	if err != nil {
		syntaxError(file, err, st.ds, data)
		return
	}
	var walk func(n *yaml.Node, key string)
	walk = func(n *yaml.Node, key string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, key)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i], "")
				walk(n.Content[i+1], n.Content[i].Value)
			}
		case yaml.ScalarNode:
			p := at
			if at.Line == 0 {
				p = posOf(n)
			}
			switch {
			case strings.Contains(strings.ToLower(n.Value), "://"):
				st.ds.errorf(file, p, field, "a plugin configuration with a URL is refused: gpuctl never uses the network while rendering")
			case key == "kind" && strings.Contains(strings.ToLower(n.Value), "helm"):
				st.ds.errorf(file, p, field, "Helm charts are refused: gpuctl never runs helm or fetches charts")
			}
		}
	}
	for _, n := range nodes {
		walk(n, "")
		for _, f := range pluginFiles(n) {
			st.checkRef(c, kref{field: r.field + "." + f.field, at: r.at, value: f.value, raw: f.value, kind: refFile})
		}
	}
}

// pluginFile is a file that a built-in plugin configuration names.
type pluginFile struct{ field, value string }

// pluginFiles lists the files that a built-in plugin configuration (one YAML document) makes
// kustomize read, relative to the kustomization: a generator's files (after key=), envs and
// env; a patch transformer's path or paths; a replacement transformer's replacements' paths.
func pluginFiles(doc *yaml.Node) []pluginFile {
	var m struct {
		Kind         string
		Files, Envs  []string
		Env, Path    string
		Paths        []string
		Replacements []struct{ Path string }
	}
	if doc.Decode(&m) != nil {
		return nil // kustomize reports a configuration it cannot read
	}
	var out []pluginFile
	add := func(field string, vals ...string) {
		for _, v := range vals {
			if v != "" {
				out = append(out, pluginFile{field, v})
			}
		}
	}
	switch m.Kind {
	case "ConfigMapGenerator", "SecretGenerator":
		for _, f := range m.Files {
			_, after, found := strings.Cut(f, "=")
			if !found {
				after = f
			}
			add("files", after)
		}
		add("envs", m.Envs...)
		add("env", m.Env)
	case "PatchTransformer", "PatchJson6902Transformer", "PatchStrategicMergeTransformer":
		add("path", m.Path)
		add("paths", m.Paths...)
	case "ReplacementTransformer":
		for _, r := range m.Replacements {
			add("replacements.path", r.Path)
		}
	}
	return out
}

// errStat ends the walk of statFile.
var errStat = errors.New("stat")

// fileProblem says why kustomize must not read the file p: it is not a regular file (a
// FIFO or a device would block or never end), or it is larger than MaxFileSize (a sparse
// file of a gigabyte costs the reconciler its memory). It never opens the file.
func (st *run) fileProblem(p string) string {
	var info os.FileInfo
	err := st.fsys.Walk(realPath(st.fsys, p), func(_ string, i os.FileInfo, err error) error {
		if err == nil {
			info = i
		}
		return errStat
	})
	switch {
	case info == nil || !errors.Is(err, errStat):
		return "" // kustomize reports a file it cannot read
	case !info.Mode().IsRegular():
		return "not a regular file (a device, pipe or socket); only files are read"
	case info.Size() > MaxFileSize:
		return fmt.Sprintf("file is too large (%s, the limit is %s)", humanBytes(int(info.Size())), humanBytes(MaxFileSize))
	}
	return ""
}

// hasKustomization reports whether a directory holds a kustomization file.
func (st *run) hasKustomization(dir string) bool {
	for _, k := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if st.fsys.Exists(filepath.Join(dir, k)) {
			return true
		}
	}
	return false
}

// kdisplay names a kustomization (or any) file the way the user named the rendered path.
func (st *run) kdisplay(abs string) string {
	return filepath.Join(filepath.Dir(st.displayOf(abs)), filepath.Base(abs))
}

// sameScopeRefs returns the kustomization directories that another kustomization of the same
// scope refers to: those are built as part of it. A kustomization of another scope (another
// team's, or an admin's) never takes one over.
func (st *run) sameScopeRefs() map[string]bool {
	isK := map[string]bool{}
	for _, k := range st.kdirs {
		isK[k] = true
	}
	referenced := map[string]bool{}
	for _, k := range st.kdirs {
		data, err := st.fsys.ReadFile(st.kustomizationFile(k))
		if err != nil {
			continue // reported by the check
		}
		kz := &types.Kustomization{}
		if kz.Unmarshal(data) != nil {
			continue
		}
		scope := st.scopeOf(k).key()
		refs := append(append(append([]string{}, kz.Resources...), kz.Bases...), kz.Components...) //nolint:staticcheck // bases are still read
		for _, r := range refs {
			d := filepath.Clean(filepath.Join(k, r))
			if isK[d] && d != k && st.scopeOf(d).key() == scope {
				referenced[d] = true
			}
		}
	}
	return referenced
}
