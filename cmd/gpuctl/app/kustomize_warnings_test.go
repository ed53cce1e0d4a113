package app_test

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestKustomizeDeprecationsCounted: gpuctl validate and render show kustomize's deprecation
// notices once each, as warnings with the kustomization's path and the field's line, counted
// in the summary; nothing else reaches the process's stderr.
func TestKustomizeDeprecationsCounted(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "app/kustomization.yaml", "resources: [cm.yaml]\ncommonLabels: {team: a}\npatchesStrategicMerge: [patch.yaml]\n")
	writeFile(t, dir, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n")
	writeFile(t, dir, "app/patch.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {c: d}\n")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	out, _, code := run(t, "validate", dir)
	_, errOut, renderCode := run(t, "render", dir)
	os.Stderr = stderr
	w.Close()
	raw, _ := io.ReadAll(r)
	if len(raw) != 0 {
		t.Errorf("the process's stderr received %q", raw)
	}
	if code != 0 || renderCode != 0 {
		t.Fatalf("exit codes %d, %d:\n%s", code, renderCode, out)
	}
	kfile := dir + "/app/kustomization.yaml"
	for _, text := range []string{out, errOut} {
		for _, want := range []string{
			kfile + ":2:1: warning: commonLabels: deprecated by kustomize: use labels",
			kfile + ":3:1: warning: patchesStrategicMerge: deprecated by kustomize: use patches",
		} {
			if strings.Count(text, want) != 1 {
				t.Errorf("want %q once in:\n%s", want, text)
			}
		}
	}
	if !strings.Contains(out, "valid: 2 files, ") || !strings.Contains(out, ", 1 object rendered, 2 warnings") {
		t.Errorf("summary:\n%s", out)
	}
}
