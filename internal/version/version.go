package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Version is the release version set by the link flag -X; "dev" for builds that did not set
// it. Read the version with Get, which falls back to the module version of `go install`.
var Version = dev

// dev is the version of a build that carries none.
const dev = "dev"

// develVersion is what the go command records as the main module's version when it built from
// a working tree it could not stamp.
const develVersion = "(devel)"

// Info describes a build.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// buildInfo is the binary's build information, read once.
var buildInfo = sync.OnceValue(func() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
})

// Get returns the build's version information.
func Get() Info {
	return fromBuild(Version, buildInfo())
}

// String returns the build's version: Get().Version.
func String() string { return Get().Version }

// fromBuild computes the information from the link-time version and the build information
// (nil when the binary has none): the link-time version wins; otherwise the main module's
// version as `go install module@version` records it.
func fromBuild(linked string, bi *debug.BuildInfo) Info {
	info := Info{Version: linked, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info.Version == "" {
		info.Version = dev
	}
	if bi == nil {
		return info
	}
	if v := bi.Main.Version; info.Version == dev && v != "" && v != develVersion {
		info.Version = v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			info.GitCommit = s.Value
		}
	}
	return info
}

// String formats the information on one line.
func (i Info) String() string {
	s := fmt.Sprintf("gpuctl %s (%s, %s)", i.Version, i.GoVersion, i.Platform)
	if i.GitCommit != "" {
		s += " commit " + i.GitCommit
	}
	return s
}
