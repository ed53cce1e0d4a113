package review_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/internal/term"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/review"
)

// TestTextColours: the text report paints with the CLI's palette (an added object as added,
// an error as an error, a warning as a warning), and writes no escape code without colour.
func TestTextColours(t *testing.T) {
	rep := &review.Report{
		Changes: []*review.ObjectDiff{{Action: review.DiffAdded, Ref: object.Ref{Kind: "Job", Namespace: "a", Name: "train"}}},
		Violations: []*review.Violation{
			{Rule: "maxGPUsPerJob", Severity: render.SeverityError, File: "a.yaml", Message: "too many"},
			{Rule: "allowedRegistries", Severity: render.SeverityWarning, File: "a.yaml", Message: "not allowed"},
		},
	}
	p := term.Palette{On: true}
	var colour, plain strings.Builder
	if err := review.WriteText(&colour, rep, review.TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{p.Bold(p.Added("+ added Job a/train")), "a.yaml: " + p.Error("error") + ":", "a.yaml: " + p.Warning("warning") + ":"} {
		if !strings.Contains(colour.String(), want) {
			t.Errorf("no %q in\n%q", want, colour.String())
		}
	}
	if err := review.WriteText(&plain, rep, review.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(plain.String(), "+ added Job a/train") {
		t.Errorf("without colour:\n%q", plain.String())
	}
}
