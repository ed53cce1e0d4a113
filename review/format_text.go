package review

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpuctl/gpuctl/internal/term"
	"github.com/gpuctl/gpuctl/render"
)

// TextOptions configure WriteText.
type TextOptions struct {
	// Color writes ANSI colours (for a terminal).
	Color bool
}

type textWriter struct {
	w io.Writer
	p term.Palette
}

func (t textWriter) action(a DiffAction, s string) string {
	switch a {
	case DiffAdded:
		return t.p.Added(s)
	case DiffRemoved:
		return t.p.Removed(s)
	}
	return t.p.Changed(s)
}

// WriteText writes the report for a terminal: each change with its field diff, the GPU
// budget, the violations and a summary line.
func WriteText(w io.Writer, rep *Report, opts TextOptions) error {
	t := textWriter{w: w, p: term.Palette{On: opts.Color}}
	where := "path " + rep.Path
	if rep.Cluster != "" {
		where += ", cluster " + rep.Cluster
	}
	fmt.Fprintf(w, "%s\n", t.p.Bold(fmt.Sprintf("gpuctl diff %s → %s (%s)", rep.Base.Label(), rep.Head.Label(), where)))
	t.changes(rep)
	t.budget(rep.Budget)
	t.violations(rep.Violations)
	fmt.Fprintf(w, "\n%s; %s; %s\n", t.p.Bold(countsLine(rep.Summary)), gpuLine(rep.Budget), violationsLine(rep.Summary))
	return nil
}

func (t textWriter) changes(rep *Report) {
	for _, side := range []RevisionInfo{rep.Base, rep.Head} {
		if side.Failed {
			fmt.Fprintf(t.w, "%s\n", t.p.Error(side.Label()+" does not render: its objects are left out"))
		} else if len(side.Excluded) > 0 {
			fmt.Fprintf(t.w, "%s: files with errors left out: %s\n", side.Label(), strings.Join(side.Excluded, ", "))
		}
	}
	if len(rep.Changes) == 0 {
		fmt.Fprintln(t.w, "no object changes")
		return
	}
	for _, c := range rep.Changes {
		head := fmt.Sprintf("%s %s %s", actionSymbols[c.Action], c.Action, c.Ref.String())
		if c.Source != "" {
			head += " (" + c.Source + ")"
		}
		fmt.Fprintln(t.w, t.p.Bold(t.action(c.Action, head))+changeGPUs(c))
		for _, l := range fieldLines(c) {
			if strings.HasPrefix(l, "-") {
				l = t.p.Removed(l)
			} else {
				l = t.p.Added(l)
			}
			fmt.Fprintln(t.w, "    "+l)
		}
	}
}

func (t textWriter) budget(b Budget) {
	var queues []QueueLine
	for _, l := range b.Queues {
		if l.Before > 0 || l.After > 0 || l.QuotaChanged() {
			queues = append(queues, l)
		}
	}
	if len(b.Lines) == 0 && len(queues) == 0 {
		return
	}
	fmt.Fprintf(t.w, "\n%s\n", t.p.Bold("GPU budget"))
	if len(b.Lines) > 0 {
		t.teams(b)
		if len(queues) > 0 {
			fmt.Fprintln(t.w)
		}
	}
	t.queues(queues)
}

// teams writes the GPUs per namespace, pool and GPU type, and per team against its quota.
func (t textWriter) teams(b Budget) {
	tw := tabwriter.NewWriter(t.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOOL\tGPU TYPE\tBEFORE\tAFTER\tCHANGE")
	for _, l := range b.Lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", l.Namespace, l.Pool, l.GPUType, l.Before, l.After, delta(l.Before, l.After))
	}
	_ = tw.Flush()
	fmt.Fprintln(t.w)
	tw = tabwriter.NewWriter(t.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tBEFORE\tAFTER\tQUOTA\t")
	for _, tb := range b.Teams {
		note := ""
		if overQuota(tb) {
			note = t.p.Error("over quota")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", tb.Namespace, tb.Before, tb.After, teamQuotaText(tb), note)
	}
	_ = tw.Flush()
}

// queues writes the Kueue queues per pool: the GPUs requested against each queue's quota
// and limits there.
func (t textWriter) queues(lines []QueueLine) {
	if len(lines) == 0 {
		return
	}
	tw := tabwriter.NewWriter(t.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tPOOL\tBEFORE\tAFTER\tQUEUE QUOTA\tBORROWING LIMIT\tLENDING LIMIT\t")
	for _, l := range lines {
		quota, borrowing, lending := queueColumns(l)
		note := queueNote(l)
		if note != "" {
			note = t.p.Warning(note)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", l.Team, l.Pool, l.Before, l.After, quota, borrowing, lending, note)
	}
	_ = tw.Flush()
}

func (t textWriter) violations(vs []*Violation) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(t.w, "\n%s\n", t.p.Bold("Violations"))
	for _, v := range vs {
		sev := string(v.Severity)
		if v.Severity == render.SeverityError {
			sev = t.p.Error(sev)
		} else {
			sev = t.p.Warning(sev)
		}
		pre := ""
		if v.Preexisting {
			pre = " (already in base)"
		}
		fmt.Fprintf(t.w, "%s: %s: [%s] %s%s\n", v.Where(), sev, v.Rule, v.Message, pre)
	}
}
