package install

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflow is the part of a GitHub Actions workflow that TestReleaseWorkflow reads.
type workflow struct {
	On struct {
		Push struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	} `yaml:"on"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix map[string][]string `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Name string `yaml:"name"`
			Uses string `yaml:"uses"`
			Run  string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestReleaseWorkflow: .github/workflows/release.yaml (not run here) parses, runs on a v* tag,
// builds the images with `make image` for linux/amd64 and linux/arm64 and pushes them, builds
// gpuctl for linux and darwin on amd64 and arm64, renders deploy/'s kustomizations into the
// bundle, and publishes sha256 checksums of every asset.
func TestReleaseWorkflow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".github", "workflows", "release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("release.yaml: %v", err)
	}
	if !slices.Equal(w.On.Push.Tags, []string{"v*"}) {
		t.Errorf("on.push.tags %v, want [v*]", w.On.Push.Tags)
	}
	run := func(job string) string {
		j, ok := w.Jobs[job]
		if !ok {
			t.Fatalf("no job %q (jobs: %v)", job, keys(w.Jobs))
		}
		var s []string
		for _, st := range j.Steps {
			s = append(s, st.Run)
		}
		return strings.Join(s, "\n")
	}
	for job, wants := range map[string][]string{
		"images":   {"make image VERSION=${GITHUB_REF_NAME} IMAGE_PLATFORMS=linux/amd64,linux/arm64", "crane push", "hack/image/images.env"},
		"binaries": {"go build -trimpath", "internal/version.Version=${GITHUB_REF_NAME}", "./cmd/$cmd", "CGO_ENABLED"},
		"bundle":   {"kubectl kustomize deploy/base", "kubectl kustomize deploy/node-labeler", "tar -czf"},
		"release":  {"sha256sum", "gh release create"},
	} {
		got := run(job)
		if job == "binaries" {
			got += "\n" + string(b) // CGO_ENABLED is the step's env
		}
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("job %s does not run %q", job, want)
			}
		}
	}
	m := w.Jobs["binaries"].Strategy.Matrix
	if !slices.Equal(m["goos"], []string{"linux", "darwin"}) || !slices.Equal(m["goarch"], []string{"amd64", "arm64"}) {
		t.Errorf("binaries matrix %v, want goos [linux darwin] × goarch [amd64 arm64]", m)
	}
	for _, dir := range []string{"base", "node-labeler", "images"} {
		if _, err := os.Stat(filepath.Join(repoRoot, "deploy", dir, "kustomization.yaml")); err != nil {
			t.Errorf("the bundle and the tag check name deploy/%s: %v", dir, err)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for name := range m {
		k = append(k, name)
	}
	slices.Sort(k)
	return k
}
