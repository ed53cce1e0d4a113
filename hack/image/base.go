package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// The files that make a scratch base usable by a non-root Go program (distroless's).
const (
	passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`
	group = `root:x:0:
nobody:x:65534:
nonroot:x:65532:
`
	nsswitch = "hosts: files dns\n"
	// ldSoConf lets ldconfig, which the NVIDIA container toolkit runs in the container after
	// it mounts libnvidia-ml.so.1, find the library directories of libc6's ld.so.conf.d.
	ldSoConf = "include /etc/ld.so.conf.d/*.conf\n"
)

// staticBase is the base of the static images: users, CA certificates, /tmp and the
// non-root user's home. Nothing in it runs.
func staticBase(ctx context.Context, c *debs, cfg Config) (*tree, error) {
	t := newTree()
	t.file("etc/passwd", 0o644, []byte(passwd))
	t.file("etc/group", 0o644, []byte(group))
	t.file("etc/nsswitch.conf", 0o644, []byte(nsswitch))
	t.dir("tmp", 0o1777, 0, 0)
	t.dir("root", 0o700, 0, 0)
	t.dir(WorkingDir, 0o700, 65532, 65532)
	d := deb{Name: "ca-certificates", Version: cfg.CACertificates, Arch: "all"}
	data, err := install(ctx, c, t, d)
	if err != nil {
		return nil, err
	}
	bundle, copyright, err := caBundle(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d, err)
	}
	t.file(CABundle, 0o644, bundle)
	t.file("usr/share/doc/ca-certificates/copyright", 0o644, copyright)
	return t, nil
}

// glibcBase is staticBase with Debian's libc6 for arch (dynamic loader, libc, libm, ...).
func glibcBase(ctx context.Context, c *debs, cfg Config, arch string) (*tree, error) {
	t, err := staticBase(ctx, c, cfg)
	if err != nil {
		return nil, err
	}
	d := deb{Name: "libc6", Version: cfg.LibC6, Arch: arch}
	data, err := install(ctx, c, t, d)
	if err != nil {
		return nil, err
	}
	if err := t.addTar(data, keepDebFile); err != nil {
		return nil, fmt.Errorf("%s: %w", d, err)
	}
	t.file("etc/ld.so.conf", 0o644, []byte(ldSoConf))
	return t, nil
}

// keepDebFile drops the documentation of a package but its copyright.
func keepDebFile(name string) bool {
	if rest, ok := strings.CutPrefix(name, "usr/share/doc/"); ok {
		_, file, _ := strings.Cut(rest, "/")
		return file == "" || file == "copyright"
	}
	for _, dir := range []string{"usr/share/man", "usr/share/info", "usr/share/lintian"} {
		if name == dir || strings.HasPrefix(name, dir+"/") {
			return false
		}
	}
	return true
}

// install fetches d, records it in /var/lib/dpkg/status.d (its control file, as distroless
// does, for scanners that list a container's Debian packages) and returns its data.tar, for
// the caller to take files from.
func install(ctx context.Context, c *debs, t *tree, d deb) (*tar.Reader, error) {
	p, err := c.fetch(ctx, d)
	if err != nil {
		return nil, err
	}
	control, err := debControl(ctx, p)
	if err != nil {
		return nil, err
	}
	t.file("var/lib/dpkg/status.d/"+d.Name, 0o644, control)
	return debData(ctx, p)
}

// caBundle concatenates the certificates of ca-certificates's data.tar in name order, as
// update-ca-certificates does at install, and returns the package's copyright file.
func caBundle(r *tar.Reader) (bundle, copyright []byte, err error) {
	certs := map[string][]byte{}
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		name := clean(hdr.Name)
		switch {
		case hdr.Typeflag == tar.TypeReg && strings.HasPrefix(name, "usr/share/ca-certificates/") && strings.HasSuffix(name, ".crt"):
			if certs[name], err = io.ReadAll(r); err != nil {
				return nil, nil, err
			}
		case name == "usr/share/doc/ca-certificates/copyright":
			if copyright, err = io.ReadAll(r); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(certs) < 50 || copyright == nil {
		return nil, nil, fmt.Errorf("data.tar has %d certificates and copyright %t; is it ca-certificates?", len(certs), copyright != nil)
	}
	var buf bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(certs)) {
		buf.Write(certs[name])
		if !bytes.HasSuffix(certs[name], []byte("\n")) {
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes(), copyright, nil
}
