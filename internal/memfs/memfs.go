package memfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var _ filesys.FileSystem = (*FS)(nil)

// FS is a filesystem in memory that takes any file name; safe for concurrent use.
type FS struct {
	mu   sync.RWMutex
	root *node
}

// node is a directory (children not nil) or a file.
type node struct {
	name     string
	parent   *node
	children map[string]*node
	data     []byte
}

// New returns an empty filesystem: its root directory, "/".
func New() *FS {
	return &FS{root: &node{name: "/", children: map[string]*node{}}}
}

// path is the node's absolute path.
func (n *node) path() string {
	if n.parent == nil {
		return "/"
	}
	return filepath.Join(n.parent.path(), n.name)
}

func (n *node) isDir() bool { return n.children != nil }

// split cleans p and returns its names from the root.
func split(p string) []string {
	p = filepath.ToSlash(filepath.Clean("/" + filepath.ToSlash(p)))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// find returns the node of p; nil when it does not exist, an error when a directory of it is
// a file.
func (f *FS) find(p string) (*node, error) {
	n := f.root
	for _, name := range split(p) {
		if !n.isDir() {
			return nil, fmt.Errorf("%s: %s is not a directory", p, n.path())
		}
		c, ok := n.children[name]
		if !ok {
			return nil, nil
		}
		n = c
	}
	return n, nil
}

// mkdirs makes the directories names (from the root) and returns the last.
func (f *FS) mkdirs(p string, names []string) (*node, error) {
	n := f.root
	for _, name := range names {
		c, ok := n.children[name]
		switch {
		case !ok:
			c = &node{name: name, parent: n, children: map[string]*node{}}
			n.children[name] = c
		case !c.isDir():
			return nil, fmt.Errorf("%s: %s is a file", p, c.path())
		}
		n = c
	}
	return n, nil
}

// lookup is the node of p, which must exist (op names the operation in the error); the caller
// holds the lock.
func (f *FS) lookup(op, p string) (*node, error) {
	n, err := f.find(p)
	if err == nil && n == nil {
		err = notExist(op, p)
	}
	return n, err
}

// notExist is the error of a path that does not exist.
func notExist(op, p string) error {
	return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
}

// Create makes an empty file p (and its directories), or empties it, and opens it.
func (f *FS) Create(p string) (filesys.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.write(p, nil)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, n: n}, nil
}

// write sets the content of the file p, making it and its directories.
func (f *FS) write(p string, data []byte) (*node, error) {
	names := split(p)
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: is a directory", p)
	}
	dir, err := f.mkdirs(p, names[:len(names)-1])
	if err != nil {
		return nil, err
	}
	name := names[len(names)-1]
	n, ok := dir.children[name]
	switch {
	case !ok:
		n = &node{name: name, parent: dir}
		dir.children[name] = n
	case n.isDir():
		return nil, fmt.Errorf("%s: is a directory", p)
	}
	n.data = slices.Clone(data)
	return n, nil
}

// Mkdir makes the directory p, and those above it.
func (f *FS) Mkdir(p string) error { return f.MkdirAll(p) }

// MkdirAll makes the directory p, and those above it.
func (f *FS) MkdirAll(p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.mkdirs(p, split(p))
	return err
}

// RemoveAll removes p and what it holds; nothing when it does not exist.
func (f *FS) RemoveAll(p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.find(p)
	switch {
	case err != nil || n == nil:
		return err
	case n.parent == nil:
		return fmt.Errorf("%s: cannot remove the root", p)
	}
	delete(n.parent.children, n.name)
	return nil
}

// Open opens the file p to read (and write).
func (f *FS) Open(p string) (filesys.File, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.lookup("open", p)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, n: n}, nil
}

// IsDir reports whether p is a directory.
func (f *FS) IsDir(p string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, _ := f.find(p)
	return n != nil && n.isDir()
}

// ReadDir lists the names in the directory p, sorted.
func (f *FS) ReadDir(p string) ([]string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.lookup("readdir", p)
	switch {
	case err != nil:
		return nil, err
	case !n.isDir():
		return nil, fmt.Errorf("%s is not a directory", p)
	}
	return n.sorted(), nil
}

// sorted is the names of a directory's children, sorted.
func (n *node) sorted() []string {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// CleanedAbs is p, absolute and clean, split in a directory and a file name ("" when p is a
// directory). p must exist; there are no symbolic links.
func (f *FS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.lookup("stat", p)
	switch {
	case err != nil:
		return "", "", err
	case n.isDir():
		return filesys.ConfirmedDir(n.path()), "", nil
	}
	return filesys.ConfirmedDir(n.parent.path()), n.name, nil
}

// Exists reports whether p exists.
func (f *FS) Exists(p string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, _ := f.find(p)
	return n != nil
}

// Glob lists the files whose path matches pattern (filepath.Match), sorted; hidden files only
// when the pattern names one, as kyaml's filesystems do.
func (f *FS) Glob(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	var out []string
	err := f.Walk("/", func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if ok, _ := filepath.Match(pattern, p); ok {
				out = append(out, p)
			}
		}
		return err
	})
	if !filesys.IsHiddenFilePath(pattern) {
		out = filesys.RemoveHiddenFiles(out)
	}
	slices.Sort(out)
	return out, err
}

// ReadFile returns a copy of the content of the file p.
func (f *FS) ReadFile(p string) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.lookup("read", p)
	switch {
	case err != nil:
		return nil, err
	case n.isDir():
		return nil, fmt.Errorf("%s: is a directory", p)
	}
	return slices.Clone(n.data), nil
}

// WriteFile sets the content of the file p, making it and its directories.
func (f *FS) WriteFile(p string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.write(p, data)
	return err
}

// Walk calls fn for p and, when it is a directory, everything below it, in lexical order,
// with absolute paths; as filepath.Walk, filepath.SkipDir skips a directory (or the rest of a
// file's), filepath.SkipAll the rest. No lock is held while fn runs: it may read and write.
func (f *FS) Walk(p string, fn filepath.WalkFunc) error {
	f.mu.RLock()
	n, err := f.find(p)
	f.mu.RUnlock()
	switch {
	case err != nil:
		return fn(p, nil, err)
	case n == nil:
		return fn(p, nil, notExist("lstat", p))
	}
	err = f.walk(n, fn)
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

// walk walks below n.
func (f *FS) walk(n *node, fn filepath.WalkFunc) error {
	f.mu.RLock()
	fi, p := n.stat(), n.path()
	var kids []*node
	for _, name := range n.sorted() {
		kids = append(kids, n.children[name])
	}
	f.mu.RUnlock()
	err := fn(p, fi, nil)
	if !fi.dir || err != nil {
		return err
	}
	for _, c := range kids {
		err := f.walk(c, fn)
		if err == filepath.SkipDir && !c.isDir() {
			return nil // the rest of this directory
		}
		if err != nil && err != filepath.SkipDir {
			return err
		}
	}
	return nil
}

// stat describes the node as it is now.
func (n *node) stat() info {
	return info{name: n.name, size: int64(len(n.data)), dir: n.isDir()}
}

// info is a node's os.FileInfo.
type info struct {
	name string
	size int64
	dir  bool
}

func (i info) Name() string       { return i.name }
func (i info) Size() int64        { return i.size }
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }
func (i info) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}

// file is an open file: reads and writes at an offset into its node's content.
type file struct {
	fs  *FS
	n   *node
	off int
}

// Read reads from the offset.
func (h *file) Read(b []byte) (int, error) {
	h.fs.mu.RLock()
	defer h.fs.mu.RUnlock()
	if h.n.isDir() {
		return 0, fmt.Errorf("%s: is a directory", h.n.path())
	}
	if h.off >= len(h.n.data) {
		return 0, io.EOF
	}
	c := copy(b, h.n.data[h.off:])
	h.off += c
	return c, nil
}

// Write writes at the offset.
func (h *file) Write(b []byte) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.n.isDir() {
		return 0, fmt.Errorf("%s: is a directory", h.n.path())
	}
	if end := h.off + len(b); end > len(h.n.data) {
		h.n.data = append(h.n.data, make([]byte, end-len(h.n.data))...)
	}
	c := copy(h.n.data[h.off:], b)
	h.off += c
	return c, nil
}

// Close closes the file.
func (h *file) Close() error { return nil }

// Stat describes the file.
func (h *file) Stat() (os.FileInfo, error) {
	h.fs.mu.RLock()
	defer h.fs.mu.RUnlock()
	return h.n.stat(), nil
}
