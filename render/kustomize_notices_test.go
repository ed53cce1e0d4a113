package render

import (
	"io"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/syncbuf"
)

// captureOutput runs f with os.Stderr and the standard logger redirected, and returns what
// each received. It first waits for builds that other tests left running (a render abandoned
// at its deadline finishes its kustomize build later) so that it restores the real stderr.
func captureOutput(t *testing.T, f func()) (stderr, logged string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); kustomizeStderr.busy(); {
		if time.Now().After(deadline) {
			t.Fatal("a kustomize build of another test is still running")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan string)
	go func() { b, _ := io.ReadAll(r); read <- string(b) }()
	var logBuf syncbuf.Buffer
	oldStderr, oldLog := os.Stderr, log.Writer()
	os.Stderr = w
	log.SetOutput(&logBuf)
	func() {
		defer func() { os.Stderr = oldStderr; log.SetOutput(oldLog) }()
		f()
	}()
	w.Close()
	return <-read, logBuf.String()
}

// renderMem renders files below /repo.
func renderMem(t *testing.T, files map[string]string) *Result {
	t.Helper()
	fs, err := MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(Options{}).Render(fs, "/repo")
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return res
}

// TestKustomizeDeprecationsAreWarnings: kustomize's deprecation notices (commonLabels,
// patchesStrategicMerge, ...) become warnings on the kustomization with the field's line,
// once each even when two overlays build the same base, and kustomize writes nothing to
// stderr or the standard logger during the render.
func TestKustomizeDeprecationsAreWarnings(t *testing.T) {
	files := map[string]string{
		"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n" +
			"commonLabels:\n  team: a\npatchesStrategicMerge:\n  - patch.yaml\n",
		"base/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n",
		"base/patch.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {c: d}\n",
		"a/kustomization.yaml": "resources: [../base]\nnamePrefix: a-\n",
		"b/kustomization.yaml": "resources: [../base]\nnamePrefix: b-\n",
	}
	var res *Result
	stderr, logged := captureOutput(t, func() { res = renderMem(t, files) })
	if stderr != "" || logged != "" {
		t.Errorf("kustomize wrote during the render:\nstderr: %q\nlog: %q", stderr, logged)
	}
	var got []string
	for _, d := range res.Warnings() {
		got = append(got, d.Error())
	}
	want := []string{
		"/repo/base/kustomization.yaml:4:1: warning: commonLabels: deprecated by kustomize: use labels, kustomize edit fix rewrites the kustomization",
		"/repo/base/kustomization.yaml:6:1: warning: patchesStrategicMerge: deprecated by kustomize: use patches, kustomize edit fix rewrites the kustomization",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if len(res.Objects) != 2 {
		t.Errorf("want the ConfigMaps a-cm and b-cm, got %d objects", len(res.Objects))
	}
}

// TestStderrFilterPassesOtherOutput: while builds run, what other code writes to os.Stderr
// or the standard logger still arrives; only kustomize's notices are dropped. Two builds may
// overlap: the output is restored when the last ends.
func TestStderrFilterPassesOtherOutput(t *testing.T) {
	stderr, logged := captureOutput(t, func() {
		end1 := kustomizeStderr.begin()
		end2 := kustomizeStderr.begin()
		os.Stderr.WriteString("# Warning: 'bases' is deprecated. Please use 'resources' instead. Run 'kustomize edit fix' to update your Kustomization automatically.\n")
		os.Stderr.WriteString("other goroutine\n")
		log.Printf("well-defined vars that were never replaced: X\n")
		log.Printf("server log line")
		end1()
		os.Stderr.WriteString("still filtered\n")
		end2()
		if kustomizeStderr.busy() {
			t.Error("still redirected after the last build ended")
		}
	})
	if stderr != "other goroutine\nstill filtered\n" {
		t.Errorf("stderr: %q", stderr)
	}
	if !strings.Contains(logged, "server log line") || strings.Contains(logged, "well-defined") {
		t.Errorf("log: %q", logged)
	}
}
