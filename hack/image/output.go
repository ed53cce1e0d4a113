package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// write puts an image's platforms into opts.Out as an OCI image layout, OUT/NAME, whose
// index.json holds one image index tagged VERSION, and as one docker-archive tarball per
// platform, OUT/NAME-OS-ARCH.tar.
func write(s Spec, imgs []v1.Image, opts Options) (Result, error) {
	r := Result{Spec: s, Ref: ref(s, opts.Version), Layout: filepath.Join(opts.Out, s.Name), Archives: map[string]string{}}
	tag, err := name.NewTag(r.Ref, name.StrictValidation)
	if err != nil {
		return r, fmt.Errorf("tag: %w", err)
	}
	idx, err := Index(imgs)
	if err != nil {
		return r, err
	}
	if r.Digest, err = idx.Digest(); err != nil {
		return r, err
	}
	if err := os.RemoveAll(r.Layout); err != nil {
		return r, err
	}
	p, err := layout.Write(r.Layout, empty.Index)
	if err != nil {
		return r, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationRefName:   opts.Version,
		AnnotationImageName: r.Ref,
	})); err != nil {
		return r, fmt.Errorf("layout: %w", err)
	}
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return r, err
		}
		plat := platformString(*cf.Platform())
		path := filepath.Join(opts.Out, s.Name+"-"+strings.ReplaceAll(plat, "/", "-")+".tar")
		if err := tarball.WriteToFile(path, tag, img); err != nil {
			return r, fmt.Errorf("docker archive: %w", err)
		}
		r.Archives[plat] = path
	}
	return r, nil
}
