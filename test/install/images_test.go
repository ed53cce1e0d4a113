package install

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// imageNamesFile is where `make image` (hack/image) names the images it builds, one
// IMAGE_<NAME>=<registry/name> line each.
var imageNamesFile = filepath.Join(repoRoot, "hack", "image", "images.env")

// TestDeployRunsBuiltImages: every image deploy/images sets (the one place deploy/ names its
// images and their tag) is one that `make image` builds, by the name hack/image/images.env
// gives it, and the release workflow pushes.
func TestDeployRunsBuiltImages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "images", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(imageNamesFile)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("no %s: the image build does not name its images there", imageNamesFile)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	built := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && strings.HasPrefix(key, "IMAGE_") {
			built[value] = true
		}
	}
	if len(k.Images) == 0 {
		t.Fatal("deploy/images sets no image")
	}
	for _, img := range k.Images {
		if !built[img.Name] {
			t.Errorf("deploy/images runs %s, which %s does not name (%v)", img.Name, imageNamesFile, built)
		}
	}
}
