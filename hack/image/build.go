package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// VersionVar is the variable that -ldflags -X stamps with the version, as the Makefile does.
const VersionVar = "github.com/gpuctl/gpuctl/internal/version.Version"

// The cgo settings of the node labeler, the Makefile's: go-nvml leaves NVML's symbols
// undefined, so the binary is bound lazily and starts without the NVIDIA driver.
const (
	cgoCFlags   = "-O2 -g -Wno-deprecated-declarations"
	cgoLDFlags  = "-Wl,-z,lazy"
	cgoExtLDArg = "-extldflags=-Wl,-z,lazy"
)

// Meta is what the images say about their build.
type Meta struct {
	// Version is stamped into the binaries and is every image's tag.
	Version string
	// Revision is the Git commit.
	Revision string
	// Created is the commit's time: the same commit gives the same digest.
	Created time.Time
	// Source is the repository's URL.
	Source string
}

// Labels are the OCI labels of every image.
func (m Meta) Labels() map[string]string {
	return map[string]string{
		LabelSource:   m.Source,
		LabelRevision: m.Revision,
		LabelVersion:  m.Version,
		LabelCreated:  m.Created.UTC().Format(time.RFC3339),
	}
}

// Options say what to build and where.
type Options struct {
	Meta
	// Root is the repository's root, where go build runs.
	Root string
	// Out is the output directory (bin/images).
	Out string
	// Debs is where Debian's packages are cached.
	Debs string
	// Platforms of the static images (default Platforms). The node labeler is linux/amd64.
	Platforms []v1.Platform
	// Images are the names to build (default all).
	Images []string
	// Log gets one line per step.
	Log io.Writer
}

// platformsOf are the platforms an image is built for.
func (o Options) platformsOf(s Spec) []v1.Platform {
	if s.Cgo {
		// Cross-compiling cgo needs a cross C toolchain and the target's libc: the node
		// labeler is built for the build machine's platform, which must be linux/amd64.
		return []v1.Platform{{OS: "linux", Architecture: "amd64"}}
	}
	if len(o.Platforms) > 0 {
		return o.Platforms
	}
	return Platforms
}

// goBuild builds spec's binary for plat into out, as the Makefile's build targets do.
func goBuild(ctx context.Context, root string, spec Spec, plat v1.Platform, version, out string) error {
	ldflags := "-X " + VersionVar + "=" + version
	env := append(os.Environ(), "GOOS="+plat.OS, "GOARCH="+plat.Architecture, "GOTOOLCHAIN=local")
	if spec.Cgo {
		if plat.OS != "linux" || plat.Architecture != "amd64" || runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
			return fmt.Errorf("%s: cgo builds for linux/amd64 on linux/amd64 only, not %s on %s/%s", spec.Name, plat, runtime.GOOS, runtime.GOARCH)
		}
		ldflags += " " + cgoExtLDArg
		env = append(env, "CGO_ENABLED=1", "CGO_CFLAGS="+cgoCFlags, "CGO_LDFLAGS="+cgoLDFlags)
	} else {
		env = append(env, "CGO_ENABLED=0")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=auto", "-ldflags", ldflags, "-o", out, spec.Package)
	cmd.Dir, cmd.Env = root, env
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: go build for %s: %w\n%s", spec.Name, plat, err, b)
	}
	return nil
}

// binaryLayer is the layer holding the binary at BinDir/name.
func binaryLayer(name, path string) (v1.Layer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := newTree()
	t.file(BinDir+"/"+name, 0o755, b)
	return t.layer()
}

// Assemble makes the image of spec for plat from its base and binary layers.
func Assemble(spec Spec, plat v1.Platform, base, bin v1.Layer, m Meta) (v1.Image, error) {
	cfg := &v1.ConfigFile{
		Architecture: plat.Architecture,
		OS:           plat.OS,
		Variant:      plat.Variant,
		Created:      v1.Time{Time: m.Created.UTC()},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{BinDir + "/" + spec.Name},
			WorkingDir: WorkingDir,
			Env:        []string{"PATH=" + Path, "SSL_CERT_FILE=" + CABundle},
			Labels:     m.Labels(),
		},
	}
	if len(spec.Ports) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range spec.Ports {
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	baseKind := "static"
	if spec.Cgo {
		baseKind = "glibc"
	}
	created := v1.Time{Time: m.Created.UTC()}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "hack/image: " + baseKind + " base", Comment: "users, CA certificates, /tmp"}},
		mutate.Addendum{Layer: bin, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "hack/image: " + BinDir + "/" + spec.Name}},
	)
}

// Index puts one image per platform into an OCI image index.
func Index(imgs []v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		plat := cf.Platform()
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// Result is one image built.
type Result struct {
	Spec Spec
	// Ref is REPO:VERSION.
	Ref string
	// Digest is the image index's digest: what a registry shows for Ref.
	Digest v1.Hash
	// Layout is the OCI image layout directory holding Ref.
	Layout string
	// Archives are docker-archive tarballs per platform ("linux/amd64"), for docker load.
	Archives map[string]string
}

// Build builds the images of opts into opts.Out.
func Build(ctx context.Context, cfg Config, opts Options) ([]Result, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	specs := cfg.Specs
	if len(opts.Images) > 0 {
		specs = nil
		for _, n := range opts.Images {
			s, ok := cfg.Spec(n)
			if !ok {
				return nil, fmt.Errorf("no image %q", n)
			}
			specs = append(specs, s)
		}
	}
	work, err := os.MkdirTemp("", "gpuctl-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	c := &debs{Dir: opts.Debs}
	bases := map[string]v1.Layer{} // by base kind and arch
	base := func(s Spec, arch string) (v1.Layer, error) {
		key := "static"
		if s.Cgo {
			key = "glibc-" + arch
		}
		if l := bases[key]; l != nil {
			return l, nil
		}
		var t *tree
		var err error
		if s.Cgo {
			t, err = glibcBase(ctx, c, cfg, arch)
		} else {
			t, err = staticBase(ctx, c, cfg)
		}
		if err != nil {
			return nil, err
		}
		l, err := t.layer()
		bases[key] = l
		return l, err
	}
	var results []Result
	for _, s := range specs {
		var imgs []v1.Image
		for _, plat := range opts.platformsOf(s) {
			start := time.Now()
			bin := filepath.Join(work, s.Name+"-"+plat.OS+"-"+plat.Architecture)
			if err := goBuild(ctx, opts.Root, s, plat, opts.Version, bin); err != nil {
				return nil, err
			}
			bl, err := base(s, plat.Architecture)
			if err != nil {
				return nil, fmt.Errorf("%s: base: %w", s.Name, err)
			}
			binl, err := binaryLayer(s.Name, bin)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
			img, err := Assemble(s, plat, bl, binl, opts.Meta)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
			imgs = append(imgs, img)
			fmt.Fprintf(opts.Log, "built %s for %s in %s\n", s.Name, plat, time.Since(start).Round(100*time.Millisecond))
		}
		r, err := write(s, imgs, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// ref is the image's REPO:VERSION.
func ref(s Spec, version string) string { return s.Repo + ":" + version }

// platformString is "os/arch[/variant]".
func platformString(p v1.Platform) string {
	return strings.TrimSuffix(p.OS+"/"+p.Architecture+"/"+p.Variant, "/")
}
