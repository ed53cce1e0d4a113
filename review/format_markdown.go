package review

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/markdown"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CommentMarker starts every markdown report, so that CI can find and update its previous
// comment instead of adding another.
const CommentMarker = "<!-- gpuctl-review -->"

// Marker is the first line of the markdown report of a review for cluster ("" for none):
// CommentMarker, or <!-- gpuctl-review cluster=NAME --> so that the reviews of a fleet's
// clusters (diff --base --cluster NAME) each update their own comment. A cluster name is a
// DNS label (render checks it), so it cannot end the comment.
func Marker(cluster string) string {
	if cluster == "" {
		return CommentMarker
	}
	return "<!-- gpuctl-review cluster=" + cluster + " -->"
}

// Caps of one markdown report; what is left out is counted in a note.
const (
	maxTableRows   = 100
	maxObjectLines = 120
)

// MarkdownOptions configure WriteMarkdown.
type MarkdownOptions struct {
	// MaxChars is the size limit of the comment (default markdown.MaxChars). Object diffs that
	// do not fit are left out with a note.
	MaxChars int
	// Command is the command line shown in the truncation note for the full diff.
	Command string
}

// WriteMarkdown writes the report as a pull-request comment: a summary line, the GPU budget
// of what changed, the violations, and a collapsible diff of each object.
func WriteMarkdown(w io.Writer, rep *Report, opts MarkdownOptions) error {
	_, err := io.WriteString(w, Markdown(rep, opts))
	return err
}

// Markdown returns the markdown report; see WriteMarkdown.
func Markdown(rep *Report, opts MarkdownOptions) string {
	limit := opts.MaxChars
	if limit <= 0 {
		limit = markdown.MaxChars
	}
	var sb strings.Builder
	mdHeader(&sb, rep)
	mdBudget(&sb, rep.Budget)
	mdViolations(&sb, rep.Violations)
	mdChanges(&sb, rep, limit, opts.Command)
	out := sb.String()
	if len(out) > limit { // the tables alone are too long: cut them
		note := "\n\n> ✂️ Truncated at the comment size limit.\n"
		out = cutUTF8(out, limit-len(note)) + note
	}
	return out
}

func mdHeader(sb *strings.Builder, rep *Report) {
	fmt.Fprintf(sb, "%s\n### gpuctl diff: %s → %s", Marker(rep.Cluster), markdown.Code(rep.Base.Label()), markdown.Code(rep.Head.Label()))
	if rep.Path != "." {
		fmt.Fprintf(sb, " in %s", markdown.Code(rep.Path))
	}
	if rep.Cluster != "" {
		fmt.Fprintf(sb, " for cluster %s", markdown.Code(rep.Cluster))
	}
	sb.WriteString("\n\n")
	status := "✅"
	if rep.Summary.Errors > 0 {
		status = "❌"
	} else if rep.Summary.Warnings > 0 {
		status = "⚠️"
	}
	fmt.Fprintf(sb, "%s **%s** · **%s** · %s\n", status, countsLine(rep.Summary), gpuLine(rep.Budget), violationsLine(rep.Summary))
	for _, side := range []RevisionInfo{rep.Base, rep.Head} {
		if side.Failed {
			fmt.Fprintf(sb, "\n> ❌ %s does not render: its objects are left out of the comparison.\n", markdown.Code(side.Label()))
		} else if len(side.Excluded) > 0 {
			fmt.Fprintf(sb, "\n> ⚠️ %s: files with errors are left out of the comparison: %s\n", markdown.Code(side.Label()), codeList(side.Excluded, 20))
		}
	}
}

func mdBudget(sb *strings.Builder, b Budget) {
	var changed []BudgetLine
	for _, l := range b.Lines {
		if l.Before != l.After {
			changed = append(changed, l)
		}
	}
	var teams []TeamBudget
	for _, t := range b.Teams {
		if t.Before != t.After || overQuota(t) || quotaChanged(t) {
			teams = append(teams, t)
		}
	}
	var queues []QueueLine
	for _, l := range b.Queues {
		if l.Before != l.After || l.QuotaChanged() || l.State != QueueFits {
			queues = append(queues, l)
		}
	}
	if len(changed) == 0 && len(teams) == 0 && len(queues) == 0 {
		return
	}
	sb.WriteString("\n#### GPU budget\n\n")
	if len(changed) > 0 {
		sb.WriteString("| Team | Pool | GPU type | Before | After | Δ |\n|---|---|---|---:|---:|---:|\n")
		for i, l := range changed {
			if i == maxTableRows {
				fmt.Fprintf(sb, "| … %d more | | | | | |\n", len(changed)-i)
				break
			}
			fmt.Fprintf(sb, "| %s | %s | %s | %d | %d | **%s** |\n", markdown.Text(l.Namespace), markdown.Text(l.Pool), markdown.Text(l.GPUType), l.Before, l.After, delta(l.Before, l.After))
		}
		sb.WriteString("\n")
	}
	if len(teams) > 0 {
		sb.WriteString("| Team | Before | After | Quota | |\n|---|---:|---:|---:|---|\n")
		for i, t := range teams {
			if i == maxTableRows {
				fmt.Fprintf(sb, "| … %d more | | | | |\n", len(teams)-i)
				break
			}
			note := ""
			if overQuota(t) {
				note = "❌ over quota"
			}
			fmt.Fprintf(sb, "| %s | %d | %d | %s | %s |\n", markdown.Text(t.Namespace), t.Before, t.After, teamQuotaText(t), note)
		}
	}
	if len(teams) > 0 && len(queues) > 0 {
		sb.WriteString("\n")
	}
	mdQueues(sb, queues)
}

// queueIcons mark the states of a queue line but QueueFits.
var queueIcons = map[QueueState]string{QueueBorrows: "⚠️", QueueOverLimit: "⏳"}

// mdQueues writes the Kueue queues per pool whose requests, quota or limits change, or whose
// requests do not fit the quota.
func mdQueues(sb *strings.Builder, lines []QueueLine) {
	if len(lines) == 0 {
		return
	}
	sb.WriteString("| Team | Pool | Before | After | Queue quota | Borrowing limit | Lending limit | |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for i, l := range lines {
		if i == maxTableRows {
			fmt.Fprintf(sb, "| … %d more | | | | | | | |\n", len(lines)-i)
			break
		}
		quota, borrowing, lending := queueColumns(l)
		note := queueNote(l)
		if note != "" {
			note = queueIcons[l.State] + " " + markdown.Text(note)
		}
		fmt.Fprintf(sb, "| %s | %s | %d | %d | %s | %s | %s | %s |\n", markdown.Text(l.Team), markdown.Text(l.Pool), l.Before, l.After, quota, borrowing, lending, note)
	}
}

func quotaChanged(t TeamBudget) bool { return !sameCount(t.QuotaBefore, t.QuotaAfter) }

func mdViolations(sb *strings.Builder, vs []*Violation) {
	if len(vs) == 0 {
		return
	}
	sb.WriteString("\n#### Violations\n\n| | Rule | Where | Message |\n|---|---|---|---|\n")
	for i, v := range vs {
		if i == maxTableRows {
			fmt.Fprintf(sb, "| | | | … %d more: run `gpuctl diff` locally |\n", len(vs)-i)
			break
		}
		icon := "⚠️"
		if v.Severity == render.SeverityError {
			icon = "❌"
		}
		msg := markdown.Text(v.Message)
		if v.Preexisting {
			icon, msg = "ℹ️", msg+" _(already in base)_"
		}
		fmt.Fprintf(sb, "| %s | %s | %s | %s |\n", icon, markdown.Text(string(v.Rule)), markdown.CodeCell(v.Where()), msg)
	}
}

// mdChanges writes one collapsible block per change while they fit in limit.
func mdChanges(sb *strings.Builder, rep *Report, limit int, command string) {
	if len(rep.Changes) == 0 {
		return
	}
	sb.WriteString("\n#### Changes\n\n")
	const reserve = 400 // room for the truncation note
	for i, c := range rep.Changes {
		block := mdChange(c)
		if sb.Len()+len(block)+reserve > limit {
			if command == "" {
				command = "gpuctl diff --base " + rep.Base.Name
			}
			fmt.Fprintf(sb, "\n> ✂️ %s not shown (comment size limit). Run %s for the full diff.\n",
				humanize.Plural(len(rep.Changes)-i, "more changed object is", "more changed objects are"), markdown.Code(command))
			return
		}
		sb.WriteString(block)
	}
}

func mdChange(c *ObjectDiff) string {
	var sb strings.Builder
	icon := map[DiffAction]string{DiffAdded: "➕", DiffChanged: "✏️", DiffRemoved: "➖"}[c.Action]
	fmt.Fprintf(&sb, "<details><summary>%s %s <code>%s</code>", icon, c.Action, markdown.HTML(c.Ref.String()))
	if c.Source != "" {
		fmt.Fprintf(&sb, " — %s", markdown.HTML(c.Source))
	}
	fmt.Fprintf(&sb, "%s</summary>\n\n", markdown.HTML(changeGPUs(c)))
	var lines []string
	lang := "diff"
	switch c.Action {
	case DiffChanged:
		lines = fieldLines(c)
	case DiffAdded:
		lines, lang = yamlLines(object.ForDisplay(c.After)), "yaml"
	case DiffRemoved:
		lines = []string{"- " + c.Ref.String()}
	}
	if len(lines) > maxObjectLines {
		lines = append(lines[:maxObjectLines:maxObjectLines], "# … "+humanize.Plural(len(lines)-maxObjectLines, "more line"))
	}
	body := strings.Join(lines, "\n")
	fence := markdown.Fence(body)
	fmt.Fprintf(&sb, "%s%s\n%s\n%s\n\n</details>\n", fence, lang, body, fence)
	return sb.String()
}

func yamlLines(u *unstructured.Unstructured) []string {
	b, err := render.MarshalYAML([]*unstructured.Unstructured{u})
	if err != nil {
		return []string{err.Error()}
	}
	return strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(b), "---\n"), "\n"), "\n")
}

func codeList(items []string, limit int) string {
	var parts []string
	for i, it := range items {
		if i == limit {
			parts = append(parts, fmt.Sprintf("… %d more", len(items)-i))
			break
		}
		parts = append(parts, markdown.Code(it))
	}
	return strings.Join(parts, ", ")
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
