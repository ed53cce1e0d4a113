package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "4f9c2a71d0e8"}}
	for name, tc := range map[string]struct {
		linked string
		bi     *debug.BuildInfo
		want   string
		commit string
	}{
		"link flag wins over the module version": {"v0.2.0", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.2.0", ""},
		"go install module@version":              {"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0", ""},
		"go install module@pseudo-version":       {"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-4f9c2a71d0e8"}}, "v0.0.0-20260101000000-4f9c2a71d0e8", ""},
		"go build in a checkout":                 {"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "dev", "4f9c2a71d0e8"},
		"no module version":                      {"dev", &debug.BuildInfo{}, "dev", ""},
		"no build information":                   {"dev", nil, "dev", ""},
		"an empty link flag":                     {"", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0", ""},
		"an empty link flag, no build info":      {"", nil, "dev", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := fromBuild(tc.linked, tc.bi)
			if got.Version != tc.want || got.GitCommit != tc.commit {
				t.Errorf("version %q commit %q, want %q and %q", got.Version, got.GitCommit, tc.want, tc.commit)
			}
		})
	}
}

// TestGetReadsThisBinary: a test binary sets no link flag and is built from a working tree,
// so Get reports dev, as `go run` and `go build` without -X do.
func TestGetReadsThisBinary(t *testing.T) {
	if Version != dev {
		t.Skipf("built with -X ...version.Version=%s", Version)
	}
	if got := Get(); got.Version != dev || String() != dev {
		t.Errorf("Get().Version %q, String() %q, want dev", got.Version, String())
	}
}
