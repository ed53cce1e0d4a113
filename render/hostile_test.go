package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/render"
)

// billionLaughs is an alias bomb: nine levels of nine aliases each.
func billionLaughs(root string) string {
	var b strings.Builder
	b.WriteString(root)
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestHostileInputs: every hostile input gives a clear error, quickly, and never a panic.
func TestHostileInputs(t *testing.T) {
	cases := map[string]struct {
		content string
		want    string
	}{
		"alias bomb in a manifest": {billionLaughs("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  "), "a.yaml"},
		"alias bomb in a workload": {strings.Replace(training, "image: pytorch/pytorch:2.3.0", "image: x\n  args: *l8\nx:\n  ", 1) + billionLaughs(""), "a.yaml"},
		"deep nesting":             {training + "storage: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n", "storage"},
		"only a scalar":            {"just text", "expected a mapping with kind and version"},
		"a list at the top":        {"- kind: training\n", "expected a mapping with kind and version"},
		"empty file":               {"", ""},
		"only comments and ---":    {"# nothing\n---\n---\n", ""},
		"null kind":                {"kind:\nversion: v0.1\n", "kind"},
		"kind is a list":           {"kind: [training]\nversion: v0.1\n", "unknown kind"},
		"non-string keys":          {strings.Replace(training, "gpu: 2", "gpu: 2\n  [a, b]: 1", 1), "keys must be plain names"},
		"invalid utf-8":            {"kind: training\nname: \xff\xfe\n", "not a text file"},
		"huge memory":              {strings.Replace(training, "gpu: 2", "gpu: 2\n  memory: 1e400", 1), "resources.memory"},
		"ports as floats":          {"kind: compute\nversion: v0.1\njob: {name: x}\nenvironment: {image: n}\nservice: {port: 80.5}\n", "expected an integer"},
		"merge key from nowhere":   {"kind: training\nversion: v0.1\n<<: {job: {name: x}, environment: {image: y}}\n", ""},
		"windows line endings":     {strings.ReplaceAll(training, "\n", "\r\n"), ""},
		"unicode name":             {strings.Replace(training, "name: sft", "name: 训练", 1), "job.name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			var res *render.Result
			var err error
			go func() {
				defer close(done)
				res, err = renderFiles(t, map[string]string{"a.yaml": tc.content})
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("render did not finish in 20 s")
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("expected no error, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("expected an error containing %q, got %v (objects: %d)", tc.want, err, len(res.Objects))
			}
		})
	}
}

// TestTenMegabyteFileOnDisk: a 10 MB file is refused by size before it is read whole.
func TestTenMegabyteFileOnDisk(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(strings.Repeat("# x\n", 10<<20/4)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte(training), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := render.New(render.Options{}).Render(diskFS(), dir)
	if err == nil || !strings.Contains(err.Error(), "big.yaml: file is too large (10.0 MiB, the limit is 1.0 MiB)") {
		t.Fatalf("want a size error for big.yaml, got %v", err)
	}
	if len(res.Documents) != 1 {
		t.Fatalf("ok.yaml should still be parsed; got %d documents", len(res.Documents))
	}
}
