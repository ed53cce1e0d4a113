package app

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// planJSON is the -o json form of a plan.
type planJSON struct {
	Summary string `json:"summary"`
	*reconciler.Plan
}

// symbols mark each action in text output, as terraform and kubectl diff users expect.
var symbols = map[reconciler.Action]string{
	reconciler.ActionCreate: "+", reconciler.ActionUpdate: "~", reconciler.ActionRecreate: "!",
	reconciler.ActionDelete: "-", reconciler.ActionSkipped: "=", reconciler.ActionUnchanged: " ",
}

func (p palette) action(a reconciler.Action, s string) string {
	switch a {
	case reconciler.ActionCreate:
		return p.Added(s)
	case reconciler.ActionDelete:
		return p.Removed(s)
	case reconciler.ActionUpdate, reconciler.ActionRecreate:
		return p.Changed(s)
	}
	return s
}

// printPlanDiff writes each change with a unified diff of its YAML, like kubectl diff, then
// the summary line.
func printPlanDiff(w io.Writer, plan *reconciler.Plan, p palette) {
	for _, c := range plan.Changes {
		if c.Action == reconciler.ActionUnchanged {
			continue
		}
		fmt.Fprintln(w, p.Bold(p.action(c.Action, changeHeader(c))))
		if printChangeError(w, c, p) {
			continue
		}
		for _, cf := range c.Conflicts {
			fmt.Fprintf(w, "  %s %s is owned by %q\n", p.Error("conflict:"), cf.Field, cf.Manager)
		}
		for _, cf := range c.TakeBack {
			fmt.Fprintf(w, "  %s %s\n", p.Warning("take back:"), reconciler.TakenBackText([]reconciler.Conflict{cf}))
		}
		if c.Object.Kind == "Node" && c.Object.Group() == "" {
			for _, d := range c.Diff {
				fmt.Fprintf(w, "  %s: %s → %s\n", d.Path, object.Display(d.Old), object.Display(d.New))
			}
			continue
		}
		writeColoredDiff(w, p, objectDiff(c))
	}
	printSummary(w, plan, p)
}

func printSummary(w io.Writer, plan *reconciler.Plan, p palette) {
	for _, warn := range plan.Warnings {
		fmt.Fprintln(w, p.Warning("warning: "+warn))
	}
	printNotes(w, plan, p)
	fmt.Fprintln(w, p.Bold(plan.Summary()))
	if plan.Refused != nil {
		fmt.Fprintln(w, p.Error(plan.Refused.Error()))
	}
}

// printNotes writes what the plan does not cover (its scope, what the credentials could not
// read), one "note:" line each.
func printNotes(w io.Writer, plan *reconciler.Plan, p palette) {
	for _, n := range plan.Notes {
		fmt.Fprintln(w, p.Info("note: "+n))
	}
}

// printChangeError writes the error of a change that could not be planned, and reports
// whether there was one.
func printChangeError(w io.Writer, c *reconciler.Change, p palette) bool {
	if c.Error == "" {
		return false
	}
	fmt.Fprintf(w, "  %s %s\n", p.Error("error:"), c.Error)
	return true
}

// planFailed is the error of a plan with changes that could not be planned: they were printed
// with the plan, and the command exits with ExitTrouble.
func planFailed(plan *reconciler.Plan) error {
	if n := len(plan.Failed()); n > 0 {
		return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("%s could not be planned", humanize.Plural(n, "object"))}
	}
	return nil
}

func changeHeader(c *reconciler.Change) string {
	s := fmt.Sprintf("%s %s %s", symbols[c.Action], c.Action, c.Object)
	if c.Source != "" {
		s += " (" + c.Source + ")"
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// objectDiff is the unified diff of a change's object: live before, the server's prediction
// (or the desired object) after; a Secret's values masked, those that change marked (see
// object.ForDisplayPair).
func objectDiff(c *reconciler.Change) string {
	var live, next *unstructured.Unstructured
	if c.Live != nil && c.Action != reconciler.ActionCreate {
		live = c.Live
	}
	switch {
	case c.Action == reconciler.ActionDelete:
	case c.Action == reconciler.ActionSkipped:
		next = live
	case c.Predicted != nil:
		next = c.Predicted
	case c.Desired != nil:
		next = c.Desired
	}
	before, after := object.ForDisplayPair(live, next)
	name := strings.ReplaceAll(c.Object.String(), " ", "/")
	return unifiedDiff("live/"+name, "desired/"+name, yamlText(before), yamlText(after))
}

// yamlText is u as YAML, or "" for a nil u.
func yamlText(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	b, err := render.MarshalYAML([]*unstructured.Unstructured{u})
	if err != nil {
		return err.Error()
	}
	return strings.TrimPrefix(string(b), "---\n")
}

func writeColoredDiff(w io.Writer, p palette, diff string) {
	for _, line := range splitLines(diff) {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			line = p.Bold(line)
		case strings.HasPrefix(line, "@@"):
			line = p.Info(line)
		case strings.HasPrefix(line, "+"):
			line = p.Added(line)
		case strings.HasPrefix(line, "-"):
			line = p.Removed(line)
		}
		fmt.Fprintln(w, "  "+line)
	}
}

// printChangeSet writes the results of a sync as a table of what changed or failed.
func printChangeSet(w io.Writer, cs *reconciler.ChangeSet, p palette) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range cs.Results {
		if r.Action != reconciler.ActionUnchanged || r.Error != "" {
			fmt.Fprintln(tw, "ACTION\tKIND\tNAMESPACE\tNAME\tRESULT")
			break
		}
	}
	counts := map[reconciler.Action]int{}
	failed := 0
	for _, r := range cs.Results {
		if r.Error != "" {
			failed++
		} else {
			counts[r.Action]++
		}
		if r.Action == reconciler.ActionUnchanged && r.Error == "" {
			continue
		}
		result := "ok"
		switch {
		case r.Error != "":
			result = p.Error("failed: " + r.Error)
		case r.Action == reconciler.ActionSkipped:
			result = r.Reason
		case len(r.TakenBack) > 0:
			result = "ok, took back " + reconciler.TakenBackText(r.TakenBack)
		}
		ns := r.Object.Namespace
		if ns == "" {
			ns = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.action(r.Action, string(r.Action)), r.Object.Kind, ns, r.Object.Name, result)
	}
	_ = tw.Flush()
	var parts []string
	for _, a := range []reconciler.Action{reconciler.ActionCreate, reconciler.ActionUpdate, reconciler.ActionRecreate,
		reconciler.ActionDelete, reconciler.ActionUnchanged, reconciler.ActionSkipped} {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a], pastTense[a]))
		}
	}
	if failed > 0 {
		parts = append(parts, p.Error(fmt.Sprintf("%d failed", failed)))
	}
	fmt.Fprintf(w, "%s in %s\n", p.Bold("sync: "+strings.Join(parts, ", ")), cs.Duration.Round(1e6))
}

var pastTense = map[reconciler.Action]string{
	reconciler.ActionCreate: "created", reconciler.ActionUpdate: "updated", reconciler.ActionRecreate: "recreated",
	reconciler.ActionDelete: "pruned", reconciler.ActionUnchanged: "unchanged", reconciler.ActionSkipped: "skipped",
}
