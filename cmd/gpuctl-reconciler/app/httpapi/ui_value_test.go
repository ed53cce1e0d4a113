package httpapi

import (
	"bytes"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/object"
)

// TestValueDisplayAcrossMedia: a field value prints the same — object.Display, a missing one
// object.None — in the text report, the Markdown report and the web page.
func TestValueDisplayAcrossMedia(t *testing.T) {
	h, b := testServer(t)
	now := time.Now()
	limits := map[string]any{"nvidia.com/gpu": int64(2), "memory": "64Gi"}
	b.drift = drift.Report{Generated: now, Mode: drift.ModeReport, Items: []drift.Item{{
		Object:   object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "bob", Name: "llm"},
		Category: drift.Modified, Detected: now, Manager: "kubectl-edit",
		Fields: []drift.Field{{Path: "spec.limits", Desired: limits}, {Path: "spec.replicas", Live: int64(3), Desired: int64(1)}},
	}}}
	shown := object.Display(limits)
	if shown != `{"memory":"64Gi","nvidia.com/gpu":2}` {
		t.Fatalf("Display = %s", shown)
	}
	line := "spec.limits: " + object.None + " (Git: " + shown + ")"

	var text, md bytes.Buffer
	if err := drift.WriteText(&text, b.drift, now); err != nil {
		t.Fatal(err)
	}
	if err := drift.WriteMarkdown(&md, b.drift, now); err != nil {
		t.Fatal(err)
	}
	page := okPage(t, h)
	if !strings.Contains(text.String(), line) {
		t.Errorf("text lacks %q:\n%s", line, text.String())
	}
	if want := "`spec.limits`: `" + object.None + "` (Git: `" + shown + "`)"; !strings.Contains(md.String(), want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md.String())
	}
	if want := html.EscapeString(line); !strings.Contains(page, want) {
		t.Errorf("page lacks %q", want)
	}
	for name, out := range map[string]string{"text": text.String(), "Markdown": md.String(), "page": page} {
		for _, bad := range []string{"map[", "<removed>", "_removed_", "(removed)", "(unset)", "_not set_"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s shows %q", name, bad)
			}
		}
	}
}
