// Package version reports the version of gpuctl binaries. A release build sets it at link time:
//
//	go build -ldflags "-X github.com/gpuctl/gpuctl/internal/version.Version=v0.1.0"
//
// A binary built by `go install github.com/gpuctl/gpuctl/cmd/gpuctl@v0.1.0` sets no link flag;
// the go command records the module's version in the binary's build information instead, and
// Get reads it from there. A build that has neither (go build in a checkout without VCS
// information, go run) reports "dev".
package version
