package main

import (
	_ "embed"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// imagesEnv names the images and pins the Debian packages of their bases (images.env).
//
//go:embed images.env
var imagesEnv string

// What every image shares, the same in the Dockerfile.
const (
	// User is the non-root user and group the images run as (distroless's nonroot).
	User = "65532:65532"
	// WorkingDir is the non-root user's home.
	WorkingDir = "/home/nonroot"
	// BinDir holds each image's binary, its entrypoint.
	BinDir = "/usr/local/bin"
	// CABundle is the CA certificates for Git over HTTPS, from Debian's ca-certificates.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// Path is the PATH of every image (distroless's).
	Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// The OCI annotation and label keys the images carry.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	LabelCreated  = "org.opencontainers.image.created"
	// AnnotationRefName tags a manifest in an OCI layout's index.json.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationImageName is the full reference that containerd and podman import a layout as.
	AnnotationImageName = "io.containerd.image.name"
)

// Platforms are the platforms of the static images.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Spec is one image: a binary of this module on a base.
type Spec struct {
	// Name is the binary's name and the image's last path element.
	Name string
	// Repo is the image's name without the tag (from images.env).
	Repo string
	// Package builds the binary, relative to the repository root.
	Package string
	// Cgo builds with CGO_ENABLED=1, lazily bound, on a glibc base made of Debian's libc6;
	// linux/amd64 only. Without it the binary is static and the base has no libraries.
	Cgo bool
	// Ports are the image's ExposedPorts ("8080/tcp").
	Ports []string
}

// Config is images.env read.
type Config struct {
	// Specs are the images, in the order make image builds them.
	Specs []Spec
	// Source is the org.opencontainers.image.source of every image.
	Source string
	// CACertificates and LibC6 are the pinned versions of Debian's packages.
	CACertificates, LibC6 string
}

// LoadConfig reads images.env.
func LoadConfig() (Config, error) {
	env, err := parseEnv(imagesEnv)
	if err != nil {
		return Config{}, err
	}
	get := func(k string) string {
		if v := env[k]; v != "" {
			return v
		}
		err = fmt.Errorf("images.env: %s is not set", k)
		return ""
	}
	c := Config{
		Specs: []Spec{
			{Name: "gpuctl-reconciler", Repo: get("IMAGE_RECONCILER"), Package: "./cmd/gpuctl-reconciler", Ports: []string{"8080/tcp"}},
			{Name: "gpuctl", Repo: get("IMAGE_GPUCTL"), Package: "./cmd/gpuctl"},
			{Name: "gpuctl-node-labeler", Repo: get("IMAGE_NODE_LABELER"), Package: "./cmd/gpuctl-node-labeler", Cgo: true},
		},
		Source:         get("IMAGE_SOURCE"),
		CACertificates: get("DEBIAN_CA_CERTIFICATES"),
		LibC6:          get("DEBIAN_LIBC6"),
	}
	return c, err
}

// Spec returns the image named name.
func (c Config) Spec(name string) (Spec, bool) {
	for _, s := range c.Specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// parseEnv reads KEY=VALUE lines; blank lines and lines starting with # are skipped.
func parseEnv(s string) (map[string]string, error) {
	env := map[string]string{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(v, "\"' ") {
			return nil, fmt.Errorf("images.env:%d: want KEY=VALUE without quotes or spaces, got %q", i+1, line)
		}
		env[k] = v
	}
	return env, nil
}
