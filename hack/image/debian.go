package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// deb is a Debian package at a pinned version.
type deb struct {
	Name, Version, Arch string
}

func (d deb) String() string { return d.Name + ":" + d.Arch + "=" + d.Version }

// file is the package's name in the cache.
func (d deb) file() string {
	return strings.NewReplacer(":", "%3a").Replace(d.Name + "_" + d.Version + "_" + d.Arch + ".deb")
}

// debs fetches Debian packages with apt-get download into a cache directory, which is kept
// between builds: a version Debian no longer serves still builds where it was fetched once.
type debs struct {
	Dir string

	updated sync.Once
}

// fetch returns the path of d's .deb, downloading it on first use. When apt-get finds no such
// version it runs apt-get update once (as root only) and tries again.
func (c *debs) fetch(ctx context.Context, d deb) (string, error) {
	dst := filepath.Join(c.Dir, d.file())
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(c.Dir, "download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// apt's download sandbox user must be able to write there.
	_ = os.Chmod(tmp, 0o777)
	download := func() ([]byte, error) {
		cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", d.Name+":"+d.Arch+"="+d.Version)
		cmd.Dir = tmp
		return cmd.CombinedOutput()
	}
	out, err := download()
	if err != nil && os.Geteuid() == 0 {
		var updateErr error
		c.updated.Do(func() {
			var uout []byte
			if uout, updateErr = exec.CommandContext(ctx, "apt-get", "update", "-qq").CombinedOutput(); updateErr != nil {
				updateErr = fmt.Errorf("apt-get update: %w\n%s", updateErr, uout)
			}
		})
		if updateErr != nil {
			return "", updateErr
		}
		out, err = download()
	}
	if err != nil {
		// Debian serves the current version of a package only: once a point release or a
		// security update replaces the pin, build with the current one rather than not at
		// all, and say that the pin needs updating (the digest then depends on the day).
		pinErr := fmt.Errorf("apt-get download %s: %w\n%s", d, err, bytes.TrimSpace(out))
		cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", d.Name+":"+d.Arch)
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%w\nand the current version: %w\n%s", pinErr, err, bytes.TrimSpace(out))
		}
		got, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
		fmt.Fprintf(os.Stderr, "warning: Debian no longer serves %s; built with the current %v instead: pin it in hack/image/images.env (`apt-cache policy %s`) to make the images reproducible again\n",
			d, got, d.Name)
		if len(got) != 1 {
			return "", fmt.Errorf("apt-get download %s:%s: want one .deb in %s, found %v", d.Name, d.Arch, tmp, got)
		}
		return got[0], os.Rename(got[0], filepath.Join(c.Dir, filepath.Base(got[0])))
	}
	got, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil || len(got) != 1 {
		return "", fmt.Errorf("apt-get download %s: want one .deb in %s, found %v", d, tmp, got)
	}
	return dst, os.Rename(got[0], dst)
}

// debData reads the files a package installs (its data.tar), through dpkg-deb.
func debData(ctx context.Context, path string) (*tar.Reader, error) {
	out, err := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", path).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w", path, stderrOf(err))
	}
	return tar.NewReader(bytes.NewReader(out)), nil
}

// debControl returns a package's control file.
func debControl(ctx context.Context, path string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "dpkg-deb", "--field", path).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb --field %s: %w", path, stderrOf(err))
	}
	return out, nil
}

// stderrOf adds what a failed command printed to its error.
func stderrOf(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}
