// Package memfs is a filesystem in memory for kustomize and render (a
// sigs.k8s.io/kustomize/kyaml/filesys.FileSystem) that holds a file of any name a Git tree
// holds: kyaml's own (filesys.MakeFsInMemory) refuses every name with a character outside
// [a-zA-Z0-9-_.:], so one file named "notes (old).md" stopped the edit of a whole tree.
//
// Paths are absolute, as kyaml's: a relative one is read from the root, "/".
//
//	fsys := memfs.New()
//	_ = fsys.WriteFile("/repo/teams/bob/notes (old).md", data) // makes its directories
//	res, err := render.New(opts).Render(fsys, "/repo")
package memfs
