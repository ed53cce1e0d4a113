// Package version reports the version of gpuctl binaries, set at link time:
//
//	go build -ldflags "-X github.com/gpuctl/gpuctl/internal/version.Version=v0.1.0"
package version
