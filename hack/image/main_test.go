package main

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// The cluster is for the node labeler's run; the images are built once, on first use.
func TestMain(m *testing.M) {
	code := testcluster.Main(m, testcluster.Options{})
	for _, dir := range tempDirs {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// tempDirs are removed when the tests end.
var tempDirs []string

// tempDir makes a directory that TestMain removes (the images outlive a single test).
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gpuctl-image-test-")
	if err != nil {
		t.Fatal(err)
	}
	tempDirs = append(tempDirs, dir)
	return dir
}

// testMeta is what the test builds say about themselves.
var testMeta = Meta{
	Version:  "v9.9.9-imagetest",
	Revision: "0123456789abcdef0123456789abcdef01234567",
	Created:  time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
}

// built is one build of every image for linux/amd64.
type built struct {
	opts    Options
	results map[string]Result
	err     error
}

var (
	buildOnce sync.Once
	images    built
)

// testOptions builds every image for linux/amd64 into out, with the Debian cache of make image.
func testOptions(t *testing.T, cfg Config, out string) Options {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	m := testMeta
	m.Source = cfg.Source
	return Options{Meta: m, Root: root, Out: out, Debs: filepath.Join(cache, "gpuctl", "debs"),
		Platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}}}
}

// buildImages builds the images once per test run and returns them by name.
func buildImages(t *testing.T) (Options, map[string]Result) {
	t.Helper()
	buildOnce.Do(func() {
		cfg, err := LoadConfig()
		if err != nil {
			images.err = err
			return
		}
		images.opts = testOptions(t, cfg, tempDir(t))
		start := time.Now()
		rs, err := Build(context.Background(), cfg, images.opts)
		images.err = err
		images.results = map[string]Result{}
		for _, r := range rs {
			images.results[r.Spec.Name] = r
		}
		t.Logf("built %d images in %s", len(rs), time.Since(start).Round(time.Second))
	})
	if images.err != nil {
		t.Fatal(images.err)
	}
	return images.opts, images.results
}

// layoutIndex opens the image index tagged version in an image's OCI layout.
func layoutIndex(t *testing.T, r Result, version string) v1.ImageIndex {
	t.Helper()
	p, err := layout.FromPath(r.Layout)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("%s/index.json: %d entries, want 1", r.Layout, len(m.Manifests))
	}
	d := m.Manifests[0]
	if d.Annotations[AnnotationRefName] != version || d.Annotations[AnnotationImageName] != r.Ref {
		t.Errorf("%s/index.json annotations %v, want ref.name %s and image.name %s", r.Layout, d.Annotations, version, r.Ref)
	}
	if d.Digest != r.Digest {
		t.Errorf("%s/index.json: digest %s, Build said %s", r.Layout, d.Digest, r.Digest)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// platformImage returns the image for linux/amd64 of an image's layout.
func platformImage(t *testing.T, r Result, version string) v1.Image {
	t.Helper()
	idx := layoutIndex(t, r, version)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "amd64" {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("%s: no linux/amd64 image in %v", r.Layout, m.Manifests)
	return nil
}

// rootfs is an image's file system unpacked into a directory, with the tar headers of its
// entries by path ("etc/passwd").
type rootfs struct {
	Dir     string
	Headers map[string]*tar.Header
}

var (
	unpackMu sync.Mutex
	unpacked = map[string]*rootfs{}
)

// unpack flattens an image's layers into a directory, once per image name.
func unpack(t *testing.T, nameOf string, img v1.Image) *rootfs {
	t.Helper()
	unpackMu.Lock()
	defer unpackMu.Unlock()
	if fs := unpacked[nameOf]; fs != nil {
		return fs
	}
	fs := &rootfs{Dir: tempDir(t), Headers: map[string]*tar.Header{}}
	if err := os.Chmod(fs.Dir, 0o755); err != nil { // the root directory of a chroot as 65532
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := extract(tar.NewReader(rc), fs); err != nil {
		t.Fatalf("unpack %s: %v", nameOf, err)
	}
	unpacked[nameOf] = fs
	return fs
}

// extract writes the entries of r under fs.Dir: directories, files, symbolic and hard links,
// with their modes and, as root, their owners.
func extract(r *tar.Reader, fs *rootfs) error {
	var dirs []*tar.Header
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := clean(hdr.Name)
		if strings.HasPrefix(name, "..") {
			return errors.New("entry outside the root: " + hdr.Name)
		}
		fs.Headers[name] = hdr
		p := filepath.Join(fs.Dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, hdr)
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode&0o777))
			if err != nil {
				return err
			}
			_, err = io.Copy(f, r)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, p); err != nil {
				return err
			}
		case tar.TypeLink:
			if err := os.Link(filepath.Join(fs.Dir, clean(hdr.Linkname)), p); err != nil {
				return err
			}
		default:
			return errors.New(name + ": unexpected entry type " + string(hdr.Typeflag))
		}
		if os.Geteuid() == 0 && hdr.Typeflag != tar.TypeSymlink {
			if err := os.Chown(p, hdr.Uid, hdr.Gid); err != nil {
				return err
			}
		}
	}
	for _, hdr := range dirs { // last, so that a read-only directory was still writable
		mode := os.FileMode(hdr.Mode & 0o777)
		if hdr.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if err := os.Chmod(filepath.Join(fs.Dir, clean(hdr.Name)), mode); err != nil {
			return err
		}
	}
	return nil
}

// resolve follows the symbolic links of path (absolute, in the image) inside the root.
func (fs *rootfs) resolve(t *testing.T, path string) string {
	t.Helper()
	p := clean(path)
	for range 10 {
		hdr := fs.Headers[p]
		if hdr == nil {
			t.Fatalf("%s: not in the image", path)
		}
		if hdr.Typeflag != tar.TypeSymlink {
			return filepath.Join(fs.Dir, p)
		}
		if strings.HasPrefix(hdr.Linkname, "/") {
			p = clean(hdr.Linkname)
		} else {
			p = clean(filepath.Join(filepath.Dir(p), hdr.Linkname))
		}
	}
	t.Fatalf("%s: too many symbolic links", path)
	return ""
}
