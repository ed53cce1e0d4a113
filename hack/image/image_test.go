package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// TestImagesConfig checks each image's tag, platform and configuration: the entrypoint, the
// non-root user, the labels and the creation time of the commit.
func TestImagesConfig(t *testing.T) {
	opts, results := buildImages(t)
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.Specs {
		t.Run(s.Name, func(t *testing.T) {
			r, ok := results[s.Name]
			if !ok {
				t.Fatalf("not built; built %v", slices.Sorted(maps.Keys(results)))
			}
			if want := s.Repo + ":" + opts.Version; r.Ref != want || !strings.HasPrefix(r.Ref, "ghcr.io/gpuctl/") {
				t.Errorf("ref %s, want %s under ghcr.io/gpuctl/", r.Ref, want)
			}
			img := platformImage(t, r, opts.Version)
			if err := validate.Image(img); err != nil {
				t.Errorf("not a valid image: %v", err)
			}
			if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
				t.Errorf("media type %s, want %s", mt, types.OCIManifestSchema1)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cf.Config
			if want := []string{"/usr/local/bin/" + s.Name}; !slices.Equal(c.Entrypoint, want) || len(c.Cmd) != 0 {
				t.Errorf("entrypoint %q cmd %q, want %q and no cmd", c.Entrypoint, c.Cmd, want)
			}
			if c.User != "65532:65532" || c.WorkingDir != "/home/nonroot" {
				t.Errorf("user %q workdir %q, want 65532:65532 and /home/nonroot", c.User, c.WorkingDir)
			}
			wantLabels := map[string]string{
				"org.opencontainers.image.source":   "https://github.com/gpuctl/gpuctl",
				"org.opencontainers.image.revision": testMeta.Revision,
				"org.opencontainers.image.version":  testMeta.Version,
				"org.opencontainers.image.created":  "2026-11-22T10:00:00Z",
			}
			if !maps.Equal(c.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", c.Labels, wantLabels)
			}
			if !cf.Created.Time.Equal(testMeta.Created) {
				t.Errorf("created %s, want the commit's time %s", cf.Created.Time, testMeta.Created)
			}
			for _, h := range cf.History {
				if !h.Created.Time.Equal(testMeta.Created) {
					t.Errorf("history %q created %s, want %s", h.CreatedBy, h.Created.Time, testMeta.Created)
				}
			}
			if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
				t.Errorf("env %q has no SSL_CERT_FILE", c.Env)
			}
			wantPorts := map[string]struct{}{}
			if s.Name == "gpuctl-reconciler" {
				wantPorts["8080/tcp"] = struct{}{}
			}
			if !maps.Equal(c.ExposedPorts, wantPorts) {
				t.Errorf("exposed ports %v, want %v", c.ExposedPorts, wantPorts)
			}
		})
	}
}

// TestImagesFiles unpacks each image and checks the files its binary relies on.
func TestImagesFiles(t *testing.T) {
	opts, results := buildImages(t)
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		t.Run(r.Spec.Name, func(t *testing.T) {
			fs := unpack(t, r.Spec.Name, platformImage(t, r, opts.Version))
			read := func(p string) string {
				b, err := os.ReadFile(filepath.Join(fs.Dir, p))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			if !slices.Contains(strings.Split(read("etc/passwd"), "\n"), "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin") {
				t.Errorf("/etc/passwd has no nonroot line:\n%s", read("etc/passwd"))
			}
			if !slices.Contains(strings.Split(read("etc/group"), "\n"), "nonroot:x:65532:") {
				t.Errorf("/etc/group has no nonroot line:\n%s", read("etc/group"))
			}
			if n := countCerts(t, []byte(read("etc/ssl/certs/ca-certificates.crt"))); n < 100 {
				t.Errorf("CA bundle has %d certificates, want Debian's (over 100)", n)
			}
			checkPackageVersion(t, read("var/lib/dpkg/status.d/ca-certificates"), cfg.CACertificates)
			checkEntry(t, fs, "tmp", tar.TypeDir, 0o1777, 0)
			checkEntry(t, fs, "home/nonroot", tar.TypeDir, 0o700, 65532)
			checkEntry(t, fs, "usr/local/bin/"+r.Spec.Name, tar.TypeReg, 0o755, 0)
			if entries, err := os.ReadDir(filepath.Join(fs.Dir, "tmp")); err != nil || len(entries) != 0 {
				t.Errorf("/tmp: %v, %v; want an empty directory", entries, err)
			}
			if r.Spec.Cgo {
				for _, p := range []string{"lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6", "etc/ld.so.conf", "usr/share/doc/libc6/copyright"} {
					if fs.Headers[p] == nil {
						t.Errorf("/%s is missing", p)
					}
				}
				checkPackageVersion(t, read("var/lib/dpkg/status.d/libc6"), cfg.LibC6)
				if fs.Headers["usr/share/doc/libc6/changelog.Debian.gz"] != nil || fs.Headers["usr/share/lintian"] != nil {
					t.Error("the documentation of libc6 is in the image")
				}
			} else if n := len(fs.Headers); n > 30 {
				t.Errorf("a static image of %d entries; want the base and the binary only: %v", n, slices.Sorted(maps.Keys(fs.Headers)))
			}
		})
	}
}

// countCerts parses a PEM bundle and counts its certificates.
func countCerts(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Errorf("certificate %d: %v", n, err)
		}
		n++
	}
	if len(bytes.TrimSpace(b)) > 0 {
		t.Errorf("the bundle ends with %d bytes that are no PEM block", len(b))
	}
	return n
}

func mustTag(t *testing.T, ref string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

func checkEntry(t *testing.T, fs *rootfs, name string, typ byte, mode int64, owner int) {
	t.Helper()
	h := fs.Headers[name]
	switch {
	case h == nil:
		t.Errorf("/%s is missing", name)
	case h.Typeflag != typ || h.Mode != mode || h.Uid != owner || h.Gid != owner:
		t.Errorf("/%s: type %q mode %o owner %d:%d, want type %q mode %o owner %d:%d", name, h.Typeflag, h.Mode, h.Uid, h.Gid, typ, mode, owner, owner)
	case h.ModTime.Unix() != 0:
		t.Errorf("/%s: time %s, want 0 (reproducible)", name, h.ModTime)
	}
}

// TestDockerArchiveIsTheLayoutImage checks that the tarball for docker load holds the image of
// the layout, tagged REPO:VERSION.
func TestDockerArchiveIsTheLayoutImage(t *testing.T) {
	opts, results := buildImages(t)
	for _, r := range results {
		t.Run(r.Spec.Name, func(t *testing.T) {
			path := r.Archives["linux/amd64"]
			if path == "" {
				t.Fatalf("no docker archive for linux/amd64: %v", r.Archives)
			}
			tag := mustTag(t, r.Ref)
			got, err := tarball.ImageFromPath(path, &tag)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			want := platformImage(t, r, opts.Version)
			gd, _ := got.Digest()
			wd, _ := want.Digest()
			// The tarball's manifest is Docker's; the configuration is the same blob.
			gc, _ := got.ConfigName()
			wc, _ := want.ConfigName()
			if gc != wc {
				t.Errorf("archive config %s (image %s), layout's %s (image %s)", gc, gd, wc, wd)
			}
		})
	}
}

// TestBuildIsReproducible builds every image again: the same commit gives the same digests.
func TestBuildIsReproducible(t *testing.T) {
	_, first := buildImages(t)
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	again := testOptions(t, cfg, tempDir(t))
	results, err := Build(context.Background(), cfg, again)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(first) {
		t.Fatalf("built %d images, then %d", len(first), len(results))
	}
	for _, r := range results {
		if want := first[r.Spec.Name].Digest; r.Digest != want {
			t.Errorf("%s: digest %s, first build %s", r.Spec.Name, r.Digest, want)
		}
	}
}

// TestIndexHasBothPlatforms assembles a two-platform index from stand-in binaries (no cross
// compilation in the test run) and checks the platforms and media types.
func TestIndexHasBothPlatforms(t *testing.T) {
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cfg.Spec("gpuctl")
	base := newTree()
	base.file("etc/passwd", 0o644, []byte(passwd))
	bl, err := base.layer()
	if err != nil {
		t.Fatal(err)
	}
	var imgs []v1.Image
	for _, p := range Platforms {
		bin := newTree()
		bin.file(BinDir+"/gpuctl", 0o755, []byte("not a binary for "+p.Architecture))
		l, err := bin.layer()
		if err != nil {
			t.Fatal(err)
		}
		img, err := Assemble(s, p, bl, l, testMeta)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	built, err := Index(imgs)
	if err != nil {
		t.Fatal(err)
	}
	// Validated as written: in memory, go-containerregistry's layer descriptors carry empty
	// annotations that their JSON leaves out.
	dir := t.TempDir()
	if _, err := layout.Write(dir, built); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, platformString(*d.Platform)+" "+string(d.MediaType))
	}
	want := []string{"linux/amd64 " + string(types.OCIManifestSchema1), "linux/arm64 " + string(types.OCIManifestSchema1)}
	if m.MediaType != types.OCIImageIndex || !slices.Equal(got, want) {
		t.Errorf("index %s of %q, want %s of %q", m.MediaType, got, types.OCIImageIndex, want)
	}
}

// checkPackageVersion checks that a status.d entry names its package's version: the pinned
// one, or (logged) the current one Debian served instead once it dropped the pin (the build
// warns to update hack/image/images.env; the image is still made).
func checkPackageVersion(t *testing.T, ctl, pinned string) {
	t.Helper()
	switch {
	case strings.Contains(ctl, "Version: "+pinned+"\n"):
	case strings.Contains(ctl, "\nVersion: "):
		t.Logf("built with a newer Debian package than the pin %s (update hack/image/images.env):\n%s", pinned, ctl)
	default:
		t.Errorf("the status.d entry names no version:\n%s", ctl)
	}
}
