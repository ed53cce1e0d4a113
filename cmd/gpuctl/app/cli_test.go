package app_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"sigs.k8s.io/yaml"
)

// run executes gpuctl with args and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := app.Run(t.Context(), app.Streams{Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const job = "kind: training\nversion: v0.1\njob: {name: sft}\nenvironment: {image: pytorch}\nresources: {gpu: 2}\n"

func TestValidateExamples(t *testing.T) {
	out, _, code := run(t, "validate", "../../../examples")
	if code != 0 {
		t.Fatalf("validate examples/ exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "valid: ") || !strings.Contains(out, "warning: resources.gpu-share") {
		t.Fatalf("unexpected output:\n%s", out)
	}
}

func TestValidateInvalidExitsOne(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", strings.Replace(job, "gpu: 2", "gpu_tpye: A100", 1))
	other := writeFile(t, dir, "other.yaml", "kind: pool\nversion: v0.1\nmetadata: {name: default}\n")
	out, _, code := run(t, "validate", bad, other)
	if code != app.ExitFailed {
		t.Fatalf("exit code %d, want %d", code, app.ExitFailed)
	}
	for _, want := range []string{
		bad + `:5:13: resources.gpu_tpye: unknown field "gpu_tpye", did you mean "gpu-type"?`,
		other + `:3:18: metadata.name: the pool name default is reserved`,
		"invalid: 2 files, 2 documents: 2 errors, 0 warnings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", strings.Replace(job, "gpu: 2", "gpu: -2", 1))
	out, _, code := run(t, "validate", dir, "-o", "json")
	if code != app.ExitFailed {
		t.Fatalf("exit code %d", code)
	}
	var rep struct {
		Valid  bool
		Files  int
		Errors []struct {
			File, Field, Message string
			Line, Column         int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if rep.Valid || rep.Files != 1 || len(rep.Errors) != 1 {
		t.Fatalf("report %+v", rep)
	}
	e := rep.Errors[0]
	if e.Field != "resources.gpu" || e.Line != 5 || e.Column != 18 || !strings.Contains(e.Message, "must be 0 or more") {
		t.Fatalf("error %+v", e)
	}
}

func TestRenderYAMLAndJSON(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", job)
	out, _, code := run(t, "render", dir)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	docs := strings.Split(out, "---\n")
	var kinds []string
	for _, d := range docs[1:] {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("bad YAML document: %v\n%s", err, d)
		}
		kinds = append(kinds, m["kind"].(string))
	}
	if got := strings.Join(kinds, ","); got != "PriorityClass,PriorityClass,PriorityClass,Job" {
		t.Fatalf("kinds %s", got)
	}
	out, _, code = run(t, "render", dir, "-o", "json")
	var list struct {
		Kind  string
		Items []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 || list.Kind != "List" || len(list.Items) != 4 {
		t.Fatalf("render -o json: code %d err %v list %+v", code, err, list.Kind)
	}
}

func TestRenderInvalidWritesNothing(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", job)
	writeFile(t, dir, "b.yaml", "kind: trainin\nversion: v0.1\n")
	out, errOut, code := run(t, "render", dir)
	if code != app.ExitFailed || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	if !strings.Contains(errOut, `unknown kind "trainin", did you mean "training"?`) {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	if _, errOut, code := run(t, "render", "/does/not/exist"); code != app.ExitTrouble || !strings.Contains(errOut, "/does/not/exist") {
		t.Fatalf("missing path: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := run(t, "render", ".", "-o", "xml"); code != app.ExitTrouble || !strings.Contains(errOut, `unsupported output format "xml"`) {
		t.Fatalf("bad -o: exit %d, stderr %q", code, errOut)
	}
	out, _, code := run(t, "version", "-o", "json")
	if code != 0 || !strings.Contains(out, `"version"`) {
		t.Fatalf("version: %d %q", code, out)
	}
}

// renderItems runs gpuctl render -o json with args and returns the objects.
func renderItems(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	out, errOut, code := run(t, append([]string{"render", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("render %v: exit %d: %s", args, code, errOut)
	}
	var list struct{ Items []map[string]any }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestRenderFlags: the CLI takes the daemon's render flags, so that CI renders with the
// administrator's settings: --namespace-map replaces the repository's .gpuctl.yaml, and a
// setting the daemon would refuse (a reserved namespace, --config beside the flags, any of
// them with --base) exits 2 naming the flag.
func TestRenderFlags(t *testing.T) {
	mapped := 0
	for _, it := range renderItems(t, "../../../examples", "--namespace-map", "teams/*/**=team-$1") {
		meta := it["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		src, _ := ann[keys.Source].(string)
		if strings.HasPrefix(src, "teams/alice/") {
			mapped++
			if meta["namespace"] != "team-alice" {
				t.Errorf("%s %s from %s: namespace %v, want team-alice (the flag's mapping)", it["kind"], meta["name"], src, meta["namespace"])
			}
		}
	}
	if mapped == 0 {
		t.Error("no object rendered from teams/alice/")
	}
	for name, args := range map[string][]string{
		"reserved namespace":     {"render", "../../../examples", "--namespace-map", "teams/*/**=kube-system"},
		"with --config":          {"validate", "../../../examples", "--config", "../../../examples/.gpuctl.yaml", "--host-path-prefixes", "/data"},
		"with --base":            {"diff", "--base", "HEAD", "--namespace-map", "teams/*/**=$1"},
		"--queueing with --base": {"diff", "--base", "HEAD", "--queueing", "kueue"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errOut, code := run(t, args...)
			named := strings.Contains(errOut, "--namespace-map") || strings.Contains(errOut, "--host-path-prefixes")
			if slices.Contains(args, "--queueing") {
				named = strings.Contains(errOut, "--queueing")
			}
			if code != app.ExitTrouble || !named {
				t.Errorf("exit %d (want %d), stderr does not name the flag:\n%s", code, app.ExitTrouble, errOut)
			}
		})
	}
}

// TestConfigFlagRoot: with --config, namespace rules are relative to the configuration file's
// directory, whichever subdirectory is rendered.
func TestConfigFlagRoot(t *testing.T) {
	for _, it := range renderItems(t, "--config", "../../../examples/.gpuctl.yaml", "../../../examples/teams/alice") {
		meta := it["metadata"].(map[string]any)
		if it["kind"] == "PriorityClass" {
			continue
		}
		ann := meta["annotations"].(map[string]any)
		if ann[keys.Source] == keys.ConfigFile && (meta["namespace"] == "alice" || meta["name"] == keys.PodPolicyName) {
			continue // the tenant's identity and the admission policy: the admin's objects, from the configuration
		}
		if meta["namespace"] != "alice" || !strings.HasPrefix(ann[keys.Source].(string), "teams/alice/") {
			t.Fatalf("%s %s: namespace %v, source %v", it["kind"], meta["name"], meta["namespace"], meta["annotations"])
		}
	}
}
