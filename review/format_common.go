package review

import (
	"fmt"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/object"
)

// actionSymbols mark each action, as terraform and kubectl diff users expect.
var actionSymbols = map[DiffAction]string{DiffAdded: "+", DiffChanged: "~", DiffRemoved: "-"}

// countsLine is "1 added, 2 changed, 0 removed".
func countsLine(s Summary) string {
	return fmt.Sprintf("%d added, %d changed, %d removed", s.Added, s.Changed, s.Removed)
}

// gpuLine is "GPUs 10 → 18 (+8)", or "GPUs 10 (unchanged)".
func gpuLine(b Budget) string {
	if b.Before == b.After {
		return fmt.Sprintf("GPUs %d (unchanged)", b.After)
	}
	return fmt.Sprintf("GPUs %d → %d (%+d)", b.Before, b.After, b.After-b.Before)
}

// violationsLine is "2 errors, 1 warning, 3 already in base".
func violationsLine(s Summary) string {
	parts := []string{humanize.Plural(s.Errors, "error"), humanize.Plural(s.Warnings, "warning")}
	if s.Preexisting > 0 {
		parts = append(parts, fmt.Sprintf("%d already in base", s.Preexisting))
	}
	return strings.Join(parts, ", ")
}

// delta is "+8", "-2" or "0".
func delta(before, after int64) string {
	if before == after {
		return "0"
	}
	return fmt.Sprintf("%+d", after-before)
}

// quotaText is "8", "4 → 8" or "-".
func quotaText(before, after *int64) string {
	switch {
	case after == nil && before == nil:
		return "-"
	case after == nil:
		return fmt.Sprintf("%d → -", *before)
	case before == nil || *before == *after:
		return fmt.Sprint(*after)
	}
	return fmt.Sprintf("%d → %d", *before, *after)
}

// overQuota reports whether a team requests more GPUs than its quota after the change.
func overQuota(t TeamBudget) bool { return t.QuotaAfter != nil && t.After > *t.QuotaAfter }

// changeGPUs is " · GPUs 2 → 4" for changes that request GPUs, else "".
func changeGPUs(c *ObjectDiff) string {
	if c.GPUsBefore == 0 && c.GPUsAfter == 0 {
		return ""
	}
	if c.GPUsBefore == c.GPUsAfter {
		return fmt.Sprintf(" · GPUs %d", c.GPUsAfter)
	}
	return fmt.Sprintf(" · GPUs %d → %d", c.GPUsBefore, c.GPUsAfter)
}

// fieldLines are the lines of a changed object's field diff: "- path: old" and "+ path: new".
func fieldLines(c *ObjectDiff) []string {
	var out []string
	for _, f := range c.Fields {
		if f.Old != nil {
			out = append(out, "- "+f.Path+": "+object.Display(f.Old))
		}
		if f.New != nil {
			out = append(out, "+ "+f.Path+": "+object.Display(f.New))
		}
	}
	return out
}

// queuedQuota is the quota column of a team whose quota is a Kueue queue: it has one per pool.
const queuedQuota = "per pool"

// teamQuotaText is the quota of a team: its ResourceQuota's GPUs (quotaText), or queuedQuota.
func teamQuotaText(t TeamBudget) string {
	if t.Queue && t.QuotaBefore == nil && t.QuotaAfter == nil {
		return queuedQuota
	}
	return quotaText(t.QuotaBefore, t.QuotaAfter)
}

// queueColumns are the quota, borrowing limit and lending limit of a queue in a pool, each
// as quotaText writes them ("8", "4 → 8"; "-": no queue, or a limit not set).
func queueColumns(l QueueLine) (quota, borrowing, lending string) {
	get := func(q *QueueQuota, f func(*QueueQuota) *int64) *int64 {
		if q == nil {
			return nil
		}
		return f(q)
	}
	nominal := func(q *QueueQuota) *int64 { return &q.Nominal }
	borrow := func(q *QueueQuota) *int64 { return q.BorrowingLimit }
	lend := func(q *QueueQuota) *int64 { return q.LendingLimit }
	b, a := l.QuotaBefore, l.QuotaAfter
	return quotaText(get(b, nominal), get(a, nominal)), quotaText(get(b, borrow), get(a, borrow)), quotaText(get(b, lend), get(a, lend))
}

// queueNote says what a queue line's state means: "" when the requests fit, else
// "borrows 8 of up to 8 from the cohort (preemptible)" or "over limit: 4 wait (quota 8 + up
// to 8 from the cohort)".
func queueNote(l QueueLine) string {
	q := l.QuotaAfter
	switch {
	case l.State == QueueFits:
		return ""
	case q == nil:
		return fmt.Sprintf("%s: no ClusterQueue %s", queueStateText[l.State], l.Team)
	case l.State == QueueBorrows:
		return fmt.Sprintf("%s %d of up to %d from the cohort (preemptible)", queueStateText[l.State], l.After-q.Nominal, q.Borrowable)
	}
	return fmt.Sprintf("%s: %d wait (quota %d + up to %d from the cohort)", queueStateText[l.State], l.After-q.Nominal-q.Borrowable, q.Nominal, q.Borrowable)
}
