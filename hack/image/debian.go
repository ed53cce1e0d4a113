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
		return "", fmt.Errorf("apt-get download %s: %w\n%s\n(is the version still served? `apt-cache policy %s` shows the candidate; pin it in hack/image/images.env)",
			d, err, bytes.TrimSpace(out), d.Name)
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
