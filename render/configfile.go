package render

import (
	"path/filepath"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// readConfig reads the .gpuctl.yaml found at f. A symbolic link is refused (it could show a
// file from outside the repository, such as a service account token, to the parser), and
// nothing of a file that is not a configuration is quoted in diagnostics. On an error the
// returned configuration is nil and the render fails.
func (st *run) readConfig(f string) *Config {
	if linked(st.fsys, f) {
		st.ds.errorf(f, Pos{}, "", "the configuration file is a symbolic link, which is refused; commit the file itself")
		return nil
	}
	data, err := st.fsys.ReadFile(f)
	if err != nil {
		st.ds.errorf(f, Pos{}, "", "cannot read the configuration file")
		return nil
	}
	if tooLarge(st.ds, f, int64(len(data))) {
		return nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		syntaxError(f, err, st.ds, data)
		return nil
	}
	if len(n.Content) > 0 && n.Content[0].Kind != yaml.MappingNode {
		st.ds.errorf(f, posOf(n.Content[0]), "", "expected a mapping (namespaces, hostPathPrefixes, ...), got %s; "+
			"the content is not shown", shapeOf(n.Content[0]))
		return nil
	}
	cfg, diags := ParseConfig(f, data)
	for _, d := range diags {
		st.ds.add(d)
	}
	return cfg
}

// linked reports whether the last element of p is a symbolic link (or cannot be resolved):
// on a filesystem on disk, CleanedAbs resolves links; in memory there are none.
func linked(fsys filesys.FileSystem, p string) bool {
	dir, file, err := fsys.CleanedAbs(p)
	if err != nil {
		return true
	}
	parent, _, err := fsys.CleanedAbs(filepath.Dir(p))
	if err != nil {
		return true
	}
	if file == "" { // a directory
		return string(dir) != filepath.Join(string(parent), filepath.Base(p))
	}
	return dir != parent || file != filepath.Base(p)
}

// realPath is p with every symbolic link resolved (on disk) and cleaned; p if it cannot be.
func realPath(fsys filesys.FileSystem, p string) string {
	dir, file, err := fsys.CleanedAbs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	return filepath.Join(string(dir), file)
}
