package app

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler"
)

// TestProgressWriter drives a plan and an apply of 1,000 objects, a step every 10 ms of a
// fake clock (10 s each): off a terminal, a line with done/total at most once a second, the
// apply's last step and its failure at once.
func TestProgressWriter(t *testing.T) {
	now := time.Unix(0, 0)
	var out bytes.Buffer
	pw := newProgressWriter(&out, false, func() time.Time { return now })
	for i := 1; i <= 1000; i++ {
		now = now.Add(10 * time.Millisecond)
		pw.plan(reconciler.PhaseList, i, 1000)
	}
	for i := 1; i <= 1000; i++ {
		now = now.Add(10 * time.Millisecond)
		r := reconciler.Result{Object: object.Ref{Kind: "Job", Namespace: "a", Name: "j"}, Action: reconciler.ActionCreate}
		if i == 500 {
			r.Error = "boom"
		}
		pw.apply(i, 1000, r)
	}
	pw.end()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// 19 paced lines in 20 s (the first after 1 s), the failure, and the apply's last step.
	if len(lines) < 19 || len(lines) > 21 {
		t.Fatalf("%d lines, want 19-21:\n%s", len(lines), out.String())
	}
	re := regexp.MustCompile(`^(listing|applying) \[\d+/1000\]`)
	for _, l := range lines {
		if !re.MatchString(l) {
			t.Errorf("line without phase and done/total: %q", l)
		}
	}
	if !strings.HasPrefix(lines[0], "listing [100/1000]") || !strings.Contains(out.String(), "[500/1000] create Job a/j: failed") ||
		!strings.HasPrefix(lines[len(lines)-1], "applying [1000/1000]") {
		t.Errorf("first line after 1 s, the failure, the last step:\n%s", out.String())
	}
}

// TestProgressWriterShortWorkSilent: work shorter than a second prints nothing, and on a
// terminal the line is rewritten in place and cleared at the end.
func TestProgressWriterTerminal(t *testing.T) {
	now := time.Unix(0, 0)
	var out bytes.Buffer
	pw := newProgressWriter(&out, true, func() time.Time { return now })
	pw.plan(reconciler.PhaseList, 1, 10)
	if out.Len() != 0 {
		t.Fatalf("printed before a second: %q", out.String())
	}
	now = now.Add(1500 * time.Millisecond)
	pw.plan(reconciler.PhaseDryRun, 3, 10)
	pw.end()
	if got, want := out.String(), "\r\x1b[Kdry-runs [3/10]\r\x1b[K"; got != want {
		t.Errorf("terminal output %q, want %q", got, want)
	}
}
