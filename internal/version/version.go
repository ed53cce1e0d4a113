package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version; "dev" for builds that did not set it.
var Version = "dev"

// Info describes a build.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's version information.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.GitCommit = s.Value
			}
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
