package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the import path of the repository's module.
const module = "github.com/gpuctl/gpuctl"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Name         string
	Dir          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// listPackages lists every package of the module with its imports.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; expected the whole module", len(pkgs))
	}
	return pkgs
}

// rel is a package's path inside the module ("" for a package outside it).
func rel(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// floor is where a package of the module lives: 0 ground (internal/), 1 products, 2 the top
// floor (cmd/), 3 test rigs and developer tools (test/, hack/), which stand beside the house.
func floor(r string) int {
	switch {
	case r == "internal" || strings.HasPrefix(r, "internal/"):
		return 0
	case strings.HasPrefix(r, "cmd/"):
		return 2
	case strings.HasPrefix(r, "test/"), strings.HasPrefix(r, "hack/"):
		return 3
	}
	return 1
}

var floorName = []string{"the ground floor (internal/)", "a product", "the top floor (cmd/)", "a test rig or tool (test/, hack/)"}

// TestImportsNeverPointUp checks the house's rules on the import graph of every package,
// its tests included:
//   - an import never points up a floor: internal/ imports only internal/ and third-party
//     code, products never import cmd/;
//   - nothing imports a binary's app package but the binary's main, and cmd/options only the
//     app packages;
//   - test rigs (test/) are imported only by tests and by the developer tools under hack/;
//   - go-nvml is imported only by the node labeler's NVML package.
func TestImportsNeverPointUp(t *testing.T) {
	for _, p := range listPackages(t) {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		check := func(imports []string, inTest bool) {
			for _, imp := range imports {
				if strings.HasPrefix(imp, "github.com/NVIDIA/go-nvml") && from != "nodelabeler/nvmlinfo" && !(inTest && from == "nodelabeler") {
					t.Errorf("%s imports %s: only nodelabeler/nvmlinfo may link go-nvml", from, imp)
				}
				to, ok := rel(imp)
				if !ok {
					continue
				}
				if msg := violation(from, to, inTest); msg != "" {
					where := ""
					if inTest {
						where = " (in a test)"
					}
					t.Errorf("%s imports %s%s: %s", from, to, where, msg)
				}
			}
		}
		check(p.Imports, false)
		check(slices.Concat(p.TestImports, p.XTestImports), true)
	}
}

// violation says what rule an import breaks, or "".
func violation(from, to string, inTest bool) string {
	ff, ft := floor(from), floor(to)
	if strings.TrimSuffix(to, "_test") == from {
		return ""
	}
	switch {
	case strings.HasSuffix(to, "/app") || strings.Contains(to, "/app/"):
		// cmd/<binary>/app and below: only that binary's own packages.
		bin := to[:strings.Index(to, "/app")]
		if inTest && ff == 3 {
			return "" // end-to-end tests drive the binaries' commands in-process
		}
		if from != bin && !strings.HasPrefix(from, bin+"/app") {
			return "nothing but " + bin + " imports its app"
		}
		return ""
	case to == "cmd/options":
		if !strings.HasPrefix(from, "cmd/") {
			return "only the binaries' app packages import cmd/options"
		}
		return ""
	case ft == 3:
		if !inTest && !strings.HasPrefix(from, "hack/") && ff != 3 {
			return "test rigs are imported by tests and hack/ only"
		}
		return ""
	case ff == 0 && ft != 0:
		return "the ground floor imports only the ground floor and third-party code"
	case ft > ff && ff != 3:
		return floorName[ff] + " must not import " + floorName[ft]
	}
	return ""
}

// TestViolation checks the rules themselves on imports that must pass and must fail.
func TestViolation(t *testing.T) {
	cases := map[string]struct {
		from, to string
		inTest   bool
		ok       bool
	}{
		"ground to ground":          {"internal/markdown", "internal/keys", false, true},
		"ground to product":         {"internal/configmap", "drift", false, false},
		"ground to top":             {"internal/logging", "cmd/options", false, false},
		"ground test to rig":        {"internal/keys", "test/testcluster", true, true},
		"product to ground":         {"render", "internal/keys", false, true},
		"product to product":        {"reconciler", "render", false, true},
		"product to top":            {"reconciler/daemon", "cmd/gpuctl/app", false, false},
		"product to rig":            {"reconciler", "test/testcluster", false, false},
		"product test to rig":       {"reconciler", "test/testcluster", true, true},
		"app to other binary's app": {"cmd/gpuctl-reconciler/app", "cmd/gpuctl/app", false, false},
		"main to own app":           {"cmd/gpuctl", "cmd/gpuctl/app", false, true},
		"app to own sub-package":    {"cmd/gpuctl-reconciler/app", "cmd/gpuctl-reconciler/app/httpapi", false, true},
		"e2e test to app":           {"test/e2e", "cmd/gpuctl/app", true, true},
		"product test to app":       {"drift", "cmd/gpuctl-reconciler/app/httpapi", true, false},
		"app to options":            {"cmd/gpuctl/app", "cmd/options", false, true},
		"product to options":        {"render", "cmd/options", false, false},
		"hack to rig":               {"hack/cluster", "test/testcluster", false, true},
		"rig to product":            {"test/testcluster", "internal/keys", false, true},
	}
	for name, c := range cases {
		got := violation(c.from, c.to, c.inTest)
		if (got == "") != c.ok {
			t.Errorf("%s: violation(%s → %s) = %q, want ok=%v", name, c.from, c.to, got, c.ok)
		}
	}
}

// TestEveryPackageHasDocGo checks that each package of the module says what it is for in a
// doc.go (a main package in its main.go).
func TestEveryPackageHasDocGo(t *testing.T) {
	for _, p := range listPackages(t) {
		r, _ := rel(p.ImportPath)
		if p.Name == "main" || len(p.GoFiles) == 0 {
			continue
		}
		if !slices.Contains(p.GoFiles, "doc.go") {
			t.Errorf("%s has no doc.go", r)
		}
	}
}
