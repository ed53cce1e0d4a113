package review_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/markdown/mdtest"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/review"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Names, namespaces, paths and messages come from a pull request: in the comment, none can
// end a table row, start a heading, carry HTML or mention anyone.
func TestMarkdownHostileValues(t *testing.T) {
	const evil = "x\n## Approved\n| x |<img src=x> @alice [a](http://e) `b`"
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": evil, "namespace": evil}, "data": map[string]any{evil: evil}}}
	one := func(n int64) *int64 { return &n }
	rep := &review.Report{
		Path: evil,
		Base: review.RevisionInfo{Name: evil, Excluded: []string{evil}},
		Head: review.RevisionInfo{Name: evil, Failed: true},
		Changes: []*review.ObjectDiff{
			{Action: review.DiffAdded, Ref: object.Ref{Kind: "ConfigMap", Namespace: evil, Name: evil}, Source: evil, After: obj},
			{Action: review.DiffChanged, Ref: object.Ref{Kind: "ConfigMap", Namespace: evil, Name: evil}, Source: evil, GPUsAfter: 1,
				Fields: []object.FieldDiff{{Path: "data." + evil, Old: evil, New: evil}}},
		},
		Budget: review.Budget{
			Lines: []review.BudgetLine{{Namespace: evil, Pool: evil, GPUType: evil, Before: 1, After: 2}},
			Teams: []review.TeamBudget{{Namespace: evil, Before: 1, After: 2, QuotaAfter: one(1)}},
			Queues: []review.QueueLine{{Team: evil, Pool: evil, Before: 1, After: 2, State: review.QueueOverLimit,
				QuotaAfter: &review.QueueQuota{Nominal: 1, BorrowingLimit: one(0)}}},
		},
		Violations: []*review.Violation{{Rule: review.RuleRender, Severity: render.SeverityError, File: evil, Line: 3, Message: evil}},
	}
	md := review.Markdown(rep, review.MarkdownOptions{Command: "gpuctl diff --base " + evil})
	out := strings.Replace(mdtest.HTML(t, md), review.CommentMarker, "", 1)
	if bad := mdtest.Injected(out); len(bad) > 0 {
		t.Errorf("%v in the HTML:\n%s\n%s", bad, md, out)
	}
	// the budget lines, the teams, the queues and the violations: a header and one row each
	if rows := mdtest.TableRows(out); fmt.Sprint(rows) != "[2 2 2 2]" {
		t.Errorf("table rows %v, want [2 2 2 2]:\n%s", rows, md)
	}
	if mdtest.Mentions(out) {
		t.Errorf("a mention outside code:\n%s", out)
	}
	if n := strings.Count(out, "<details>"); n != 2 || strings.Count(out, "</details>") != 2 {
		t.Errorf("%d details blocks, want 2:\n%s", n, out)
	}
	if n := strings.Count(out, "<h3>") + strings.Count(out, "<h4>"); n != 4 {
		t.Errorf("%d headings, want the title and three sections:\n%s", n, md)
	}
}

// A long diff of one object is cut with a note counting the lines left out, in the singular
// for one.
func TestMarkdownLongObjectDiffCountsLinesLeftOut(t *testing.T) {
	for n, want := range map[int]string{121: "# … 1 more line\n", 125: "# … 5 more lines\n"} {
		c := &review.ObjectDiff{Action: review.DiffChanged, Ref: object.Ref{Kind: "ConfigMap", Namespace: "a", Name: "big"}}
		for i := 0; i < n; i++ {
			c.Fields = append(c.Fields, object.FieldDiff{Path: fmt.Sprintf("data.k%d", i), New: "v"})
		}
		md := review.Markdown(&review.Report{Changes: []*review.ObjectDiff{c}}, review.MarkdownOptions{})
		if !strings.Contains(md, want) {
			t.Errorf("%d changed fields: no %q in\n%s", n, want, md[max(0, len(md)-300):])
		}
	}
}
