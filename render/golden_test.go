package render_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenCases are the rendered trees: every seed case, every scenario case, and examples/
// (also with queueing kueue, goldenOptions).
func goldenCases(t *testing.T) map[string]string {
	cases := map[string]string{"examples": "../examples", kueueExamples: "../examples"}
	for _, group := range []string{"seeds", "cases"} {
		dirs, err := filepath.Glob(filepath.Join("testdata", group, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				cases[group+"/"+filepath.Base(d)] = d
			}
		}
	}
	return cases
}

// kueueExamples is the golden case of examples/ rendered with queueing kueue: its
// .gpuctl.yaml with queueing set, as --config would give it.
const kueueExamples = "examples-kueue"

// goldenOptions are the render options of a golden case: none (the tree's .gpuctl.yaml),
// but for kueueExamples.
func goldenOptions(t *testing.T, name string) render.Options {
	t.Helper()
	if name != kueueExamples {
		return render.Options{}
	}
	data, err := os.ReadFile("../examples/.gpuctl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := render.ParseConfig("../examples/.gpuctl.yaml", data)
	if len(diags) > 0 {
		t.Fatal(diags[0])
	}
	cfg.Queueing = render.QueueingKueue
	return render.Options{Config: cfg, Root: "../examples"}
}

// renderGolden renders a tree into the golden form: the objects as YAML, then the diagnostics.
func renderGolden(t *testing.T, dir string) []byte {
	t.Helper()
	return renderGoldenWith(t, dir, render.Options{})
}

// renderGoldenWith is renderGolden with options.
func renderGoldenWith(t *testing.T, dir string, opts render.Options) []byte {
	t.Helper()
	res, err := render.New(opts).Render(filesys.MakeFsOnDisk(), dir)
	var ve *render.ValidationError
	if err != nil && !errors.As(err, &ve) {
		t.Fatalf("render %s: %v", dir, err)
	}
	var buf bytes.Buffer
	for _, d := range res.Diagnostics {
		buf.WriteString("# " + d.Error() + "\n")
	}
	out, err := render.MarshalYAML(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(out)
	return buf.Bytes()
}

// TestGolden renders each case and compares with testdata/golden/<case>.yaml; run with
// -update (make golden) to rewrite them after an intended change.
func TestGolden(t *testing.T) {
	for name, dir := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			got := renderGoldenWith(t, dir, goldenOptions(t, name))
			golden := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run `make golden` to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s (run `make golden` if the change is intended):\n%s", dir, golden, firstDiff(want, got))
			}
		})
	}
}

// TestRenderIsDeterministic renders the examples twice and expects identical bytes.
func TestRenderIsDeterministic(t *testing.T) {
	a, b := renderGolden(t, "../examples"), renderGolden(t, "../examples")
	if !bytes.Equal(a, b) {
		t.Fatalf("two renders of examples/ differ:\n%s", firstDiff(a, b))
	}
	if !bytes.Contains(a, []byte("kind: Job")) {
		t.Fatal("examples rendered no Job")
	}
}

// TestExamplesAreValid is the bar: every example validates.
func TestExamplesAreValid(t *testing.T) {
	res, err := render.New(render.Options{}).Render(filesys.MakeFsOnDisk(), "../examples")
	if err != nil {
		t.Fatalf("examples/ is invalid:\n%v", err)
	}
	kinds := map[string]int{}
	for _, o := range res.Objects {
		kinds[o.GetKind()]++
		func() { // every value must be a JSON value that unstructured objects can hold
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: DeepCopy: %v", object.RefOf(o).String(), r)
				}
			}()
			o.DeepCopy()
		}()
	}
	for _, k := range []string{"Job", "Deployment", "StatefulSet", "Service", "Namespace", "ResourceQuota", "PriorityClass", "Node", "ConfigMap"} {
		if kinds[k] == 0 {
			t.Errorf("examples/ render no %s (got %v)", k, kinds)
		}
	}
}

func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return "(equal)"
}

func diskFS() filesys.FileSystem { return filesys.MakeFsOnDisk() }
