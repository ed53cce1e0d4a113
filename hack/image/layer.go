package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is the modification time of every file in every layer, so that a layer's digest
// depends on its contents alone and a base layer is shared by every version.
var epoch = time.Unix(0, 0).UTC()

// tree is the content of one layer, written out sorted by path with owners and times fixed:
// the same content gives the same bytes.
type tree struct {
	entries map[string]*treeEntry
}

type treeEntry struct {
	hdr  tar.Header
	data []byte
}

func newTree() *tree { return &tree{entries: map[string]*treeEntry{}} }

// clean turns "/a/b", "./a/b/" and "a/b" into "a/b".
func clean(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// add puts hdr (and data for a regular file) at its cleaned name, adding missing parent
// directories (0755, root), and replacing an earlier entry of the same name.
func (t *tree) add(hdr tar.Header, data []byte) {
	name := clean(hdr.Name)
	if name == "" {
		return
	}
	if dir := path.Dir(name); dir != "." {
		if _, ok := t.entries[dir]; !ok {
			t.add(tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755}, nil)
		}
	}
	// Only these fields: no owner names, access times or extended attributes of the host.
	h := tar.Header{Typeflag: hdr.Typeflag, Name: name, Linkname: hdr.Linkname, Mode: hdr.Mode,
		Uid: hdr.Uid, Gid: hdr.Gid, ModTime: epoch, Size: int64(len(data))}
	if h.Typeflag != tar.TypeReg {
		h.Size, data = 0, nil
	}
	t.entries[name] = &treeEntry{hdr: h, data: data}
}

// dir adds a directory.
func (t *tree) dir(name string, mode int64, uid, gid int) {
	t.add(tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: gid}, nil)
}

// file adds a regular file owned by root.
func (t *tree) file(name string, mode int64, data []byte) {
	t.add(tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode}, data)
}

// addTar adds every entry of r for which keep says yes: directories, regular files, symbolic
// and hard links; devices and the like are refused.
func (t *tree) addTar(r *tar.Reader, keep func(name string) bool) error {
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := clean(hdr.Name)
		if name == "" || !keep(name) {
			continue
		}
		h := tar.Header{Typeflag: hdr.Typeflag, Name: name, Mode: hdr.Mode & 0o7777, Uid: hdr.Uid, Gid: hdr.Gid, Linkname: hdr.Linkname}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeSymlink:
			t.add(h, nil)
		case tar.TypeLink:
			h.Linkname = clean(hdr.Linkname)
			t.add(h, nil)
		case tar.TypeReg:
			data, err := io.ReadAll(r)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			t.add(h, data)
		default:
			return fmt.Errorf("%s: unsupported tar entry type %q", name, hdr.Typeflag)
		}
	}
}

// tar writes the tree, sorted by name.
func (t *tree) tar() ([]byte, error) {
	names := make([]string, 0, len(t.entries))
	for n := range t.entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, n := range names {
		e := t.entries[n]
		hdr := e.hdr
		if hdr.Typeflag == tar.TypeDir {
			hdr.Name += "/"
		}
		if err := w.WriteHeader(&hdr); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if _, err := w.Write(e.data); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layer turns the tree into a gzip-compressed OCI layer.
func (t *tree) layer() (v1.Layer, error) {
	b, err := t.tar()
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}
