package drift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/gpuctl/gpuctl/internal/humanize"
	md "github.com/gpuctl/gpuctl/internal/markdown"
	"github.com/gpuctl/gpuctl/internal/object"
)

// Renderings of a report. Each shows the items and, when the report carries one (see Since),
// the history: WriteText for a terminal, WriteMarkdown for a pull-request comment, an issue
// or a wiki page, WriteJSON for programs.

// timeLayout is how the renderings print absolute times (always in UTC).
const timeLayout = "2006-01-02 15:04:05"

// Widths of values: a table cell (text and markdown tables) and a markdown details cell.
const (
	cellValueWidth   = 40
	detailValueWidth = 300
)

// WriteText writes the report as a terminal table, kubectl style: a header line, one row
// per item (CATEGORY, OBJECT, BY, CHANGED, DETAIL and, when any item has one, CORRECTION), the
// failed corrections, then the history when the report carries one. now is the reference of
// the relative ages in CHANGED.
func WriteText(w io.Writer, r Report, now time.Time) error {
	var buf bytes.Buffer
	buf.WriteString(headerLine(r, now) + "\n")
	if len(r.Items) > 0 {
		buf.WriteString("\n")
		textItems(&buf, r, now)
	}
	if r.Truncated > 0 {
		fmt.Fprintf(&buf, "\n%s not listed: a stored report keeps at most %d.\n",
			humanize.Plural(r.Truncated, "more item"), MaxItems)
	}
	if len(r.History) > 0 {
		fmt.Fprintf(&buf, "\nHistory (%s):\n", humanize.Plural(len(r.History), "change"))
		tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME (UTC)\tCHANGE\tCATEGORY\tOBJECT\tBY")
		for _, e := range r.History {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(timeLayout), oneLine(e.Text()), e.Item.Category,
				oneLine(e.Item.Object.String()), orDash(oneLine(by(e.Item))))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, trimLines(buf.String()))
	return err
}

// trimLines drops the spaces that tabwriter leaves at the end of lines.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func textItems(buf *bytes.Buffer, r Report, now time.Time) {
	withCorrection := false
	for _, it := range r.Items {
		if it.Correction != "" || it.Error != "" {
			withCorrection = true
		}
	}
	tw := tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0)
	head := "CATEGORY\tOBJECT\tBY\tCHANGED\tDETAIL"
	if withCorrection {
		head += "\tCORRECTION"
	}
	fmt.Fprintln(tw, head)
	var failed []Item
	for _, it := range r.Items {
		lines := detailLines(it, textFormat)
		cols := []string{string(it.Category), oneLine(it.Object.String()), orDash(oneLine(by(it))), age(now, changedAt(it)), lines[0]}
		if withCorrection {
			c := oneLine(it.Correction)
			if it.Error != "" {
				c = strings.TrimSpace(c + " (failed, see below)")
				failed = append(failed, it)
			}
			cols = append(cols, orDash(c))
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
		for _, l := range lines[1:] {
			cont := "\t\t\t\t" + l
			if withCorrection {
				cont += "\t"
			}
			fmt.Fprintln(tw, cont)
		}
	}
	_ = tw.Flush()
	if len(failed) > 0 {
		buf.WriteString("\nFailed corrections:\n")
		for _, it := range failed {
			fmt.Fprintf(buf, "  %s: %s\n", oneLine(it.Object.String()), oneLine(it.Error))
		}
	}
}

// headerLine is the one-line account of a report: revision, mode, when, summary.
func headerLine(r Report, now time.Time) string {
	var parts []string
	if r.Revision != "" {
		parts = append(parts, "revision "+humanize.Revision(r.Revision))
	}
	if r.Mode != "" {
		parts = append(parts, "mode "+r.Mode.String())
	}
	if !r.Generated.IsZero() {
		parts = append(parts, fmt.Sprintf("generated %s UTC (%s ago)", r.Generated.UTC().Format(timeLayout), age(now, r.Generated)))
	}
	parts = append(parts, r.Summary())
	return strings.Join(parts, " · ")
}

// format formats the parts of a detail line for a medium: values (with a width, 0 for no
// limit) and plain text.
type format struct {
	value func(v any, width int) string
	text  func(s string) string
}

var (
	textFormat = format{value: textValue, text: oneLine}
	mdFormat   = format{value: mdValue, text: mdText}
)

// detailLines says what differs, one line per field for fields.
func detailLines(it Item, f format) []string {
	switch it.Category {
	case Deleted:
		if it.Source == "" {
			return []string{f.text("deleted; Git declares it")}
		}
		return []string{f.text("deleted; Git declares it in ") + f.value(it.Source, 0)}
	case Shadow:
		return []string{f.text(humanize.Plural(it.GPUs, "GPU") + ", not in Git")}
	case Modified:
		if len(it.Fields) == 0 {
			break
		}
		lines := make([]string, 0, len(it.Fields))
		for _, fd := range it.Fields {
			lines = append(lines, fieldLine(fd, f))
		}
		return lines
	}
	if it.Message == "" && len(it.Fields) > 0 {
		return []string{fieldLine(it.Fields[0], f)}
	}
	return []string{f.text(it.Message)}
}

// String formats the field as the text report, the web page and Events show it:
// "spec.replicas: 3 (Git: 1)".
func (fd Field) String() string { return fieldLine(fd, textFormat) }

// fieldLine reads "spec.replicas: 3 (Git: 1)": the live value (object.None when the field
// is gone), then the value in Git.
func fieldLine(fd Field, f format) string {
	live := f.value(fd.Live, cellValueWidth)
	git := f.text("not in Git")
	if fd.Desired != nil {
		git = f.text("Git: ") + f.value(fd.Desired, cellValueWidth)
	}
	return f.value(fd.Path, 0) + ": " + live + " (" + git + ")"
}

// by is who made the difference: the item's manager, else the first field manager known,
// marked when gpuctl inferred it (a removed field has no owner any more).
func by(it Item) string {
	m := it.Manager
	if m == "" {
		for _, f := range it.Fields {
			if f.Manager != "" {
				m = f.Manager
				break
			}
		}
	}
	if m == "" {
		return ""
	}
	inferred := false
	for _, f := range it.Fields {
		if f.Manager == m {
			if !f.Inferred {
				return m
			}
			inferred = true
		}
	}
	if inferred {
		return m + " (inferred)"
	}
	return m
}

// changedAt is when the difference was made: the item's time, else the latest field time,
// else when gpuctl detected it.
func changedAt(it Item) time.Time {
	if it.Changed != nil && !it.Changed.IsZero() {
		return *it.Changed
	}
	var t time.Time
	for _, f := range it.Fields {
		if f.Time != nil && f.Time.After(t) {
			t = *f.Time
		}
	}
	if !t.IsZero() {
		return t
	}
	return it.Detected
}

// age is the relative age of t, like kubectl's AGE column (45s, 5m, 3h, 2d, 1y).
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humanize.Age(now.Sub(t))
}

// textValue formats a value for a terminal line: as object.Display does, on one line, at
// most width characters (0: no limit).
func textValue(v any, width int) string {
	return truncate(oneLine(object.Display(v)), width)
}

// oneLine keeps s on one line: newlines, tabs and other control characters (which would
// break a table or forge a line) are escaped.
func oneLine(s string) string { return md.OneLine(s) }

// truncate cuts s to at most width characters, ending with "…" when cut (0: no limit).
func truncate(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	n := 0
	for i := range s {
		if n == width-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Document is the JSON (and YAML) form of a report: the one shape in which gpuctl drift -o
// json|yaml and GET /api/v1/drift answer. It is the report's fields with its summary line
// first and the history entries that Since attached last, oldest first; items and history
// are [] when empty, never null or missing.
type Document struct {
	// Summary is Report.Summary: "3 drifted: 1 modified, ..." or "no drift".
	Summary string `json:"summary"`
	Report
	// History shadows the report's field, to be present when empty.
	History []Entry `json:"history"`
}

// NewDocument is the document of a report.
func NewDocument(r Report) Document {
	d := Document{Summary: r.Summary(), Report: r, History: r.History}
	if d.Items == nil {
		d.Items = []Item{}
	}
	if d.History == nil {
		d.History = []Entry{}
	}
	d.Report.History = nil
	return d
}

// WriteJSON writes the report's Document, history included, as indented JSON: what gpuctl
// drift -o json prints and GET /api/v1/drift answers.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(NewDocument(r))
}

// WriteMarkdown writes the report for a pull-request comment, an issue or a wiki page: a
// heading, the summary, a table of the items, the desired and live value of each modified
// field in a collapsible section, and the history as a collapsed table. The output stays
// within markdown.MaxChars; items, field values and history entries that do not fit are left
// out with a note saying how many.
func WriteMarkdown(w io.Writer, r Report, now time.Time) error {
	_, err := io.WriteString(w, markdown(r, now, md.MaxChars))
	return err
}

// mdNoteReserve is room kept for the notes of what was left out.
const mdNoteReserve = 1000

func markdown(r Report, now time.Time, limit int) string {
	var sb strings.Builder
	sb.WriteString("### gpuctl drift report\n\n")
	fmt.Fprintf(&sb, "**%s**\n", mdText(r.Summary()))
	var meta []string
	if r.Revision != "" {
		meta = append(meta, "revision "+md.Code(humanize.Revision(r.Revision)))
	}
	if r.Mode != "" {
		meta = append(meta, "mode "+md.Code(r.Mode.String()))
	}
	if !r.Generated.IsZero() {
		meta = append(meta, fmt.Sprintf("generated %s UTC (%s ago)", r.Generated.UTC().Format(timeLayout), age(now, r.Generated)))
	}
	if len(meta) > 0 {
		sb.WriteString("\n" + strings.Join(meta, " · ") + "\n")
	}

	table, tableHead := mdItemRows(r, now)
	details := mdDetailBlocks(r)
	history := mdHistoryRows(r)
	const detailsHead = "\n<details><summary>Field values: Git and live</summary>\n\n"
	const detailsTail = "</details>\n"
	historyHead := fmt.Sprintf("\n<details><summary>History (%s)</summary>\n\n| Time (UTC) | Change | Category | Object | By |\n|---|---|---|---|---|\n",
		humanize.Plural(len(r.History), "change"))
	const historyTail = "\n</details>\n"

	// Share the room: the items first, then the field values, then the history; a section
	// gets at least 60% of what is left when the later ones do not fit with it.
	avail := limit - sb.Len() - len(tableHead) - len(detailsHead) - len(detailsTail) - len(historyHead) - len(historyTail) - mdNoteReserve
	tableAllot := share(avail, size(table), size(details)+size(history))
	nTable := fit(table, tableAllot)
	avail -= size(table[:nTable])
	detailsAllot := share(avail, size(details), size(history))
	nDetails := fit(details, detailsAllot)
	avail -= size(details[:nDetails])
	nHistory := fit(history, avail)

	if len(table) > 0 {
		sb.WriteString(tableHead)
		for _, row := range table[:nTable] {
			sb.WriteString(row)
		}
		if left := len(table) - nTable; left > 0 {
			fmt.Fprintf(&sb, "\n> ✂️ %d of %d items are not listed here (size limit): run `gpuctl drift` for all of them.\n", left, len(table))
		}
	}
	if r.Truncated > 0 {
		fmt.Fprintf(&sb, "\n> %s not in the report: a stored report keeps at most %d.\n",
			humanize.Plural(r.Truncated, "more item is", "more items are"), MaxItems)
	}
	writeBounded(&sb, details, nDetails, detailsHead, detailsTail,
		"> ✂️ The field values of %d more objects are left out (size limit).\n\n",
		"\n> ✂️ The field values of %d objects are left out (size limit).\n")
	writeBounded(&sb, history, nHistory, historyHead, historyTail,
		"\n> ✂️ %d older changes are left out (size limit).\n",
		"\n> ✂️ The history (%d changes) is left out (size limit).\n")
	return sb.String()
}

// writeBounded writes head, the first n rows, a note (someLeft) on the rows left out, and
// tail; with n 0 only a note (allLeft) on all of them. Nothing when there are no rows.
func writeBounded(sb *strings.Builder, rows []string, n int, head, tail, someLeft, allLeft string) {
	switch {
	case len(rows) == 0:
	case n == 0:
		fmt.Fprintf(sb, allLeft, len(rows))
	default:
		sb.WriteString(head)
		for _, r := range rows[:n] {
			sb.WriteString(r)
		}
		if left := len(rows) - n; left > 0 {
			fmt.Fprintf(sb, someLeft, left)
		}
		sb.WriteString(tail)
	}
}

// share is the room a section of size want gets out of avail when the later sections need
// rest: all it wants if everything fits, else at least 60% of avail.
func share(avail, want, rest int) int {
	if want+rest <= avail {
		return want
	}
	return max(avail*6/10, avail-rest)
}

// fit is how many of parts fit, in order, in room.
func fit(parts []string, room int) int {
	n := 0
	for i, p := range parts {
		if n+len(p) > room {
			return i
		}
		n += len(p)
	}
	return len(parts)
}

func size(parts []string) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

func mdItemRows(r Report, now time.Time) ([]string, string) {
	withCorrection := false
	for _, it := range r.Items {
		if it.Correction != "" || it.Error != "" {
			withCorrection = true
		}
	}
	head := "\n| Category | Object | By | Changed | Detail |"
	sep := "|---|---|---|---|---|"
	if withCorrection {
		head += " Correction |"
		sep += "---|"
	}
	head += "\n" + sep + "\n"
	rows := make([]string, 0, len(r.Items))
	for _, it := range r.Items {
		cols := []string{mdText(string(it.Category)), mdCode(it.Object.String(), 0), mdCodeOrDash(by(it)), age(now, changedAt(it)),
			strings.Join(detailLines(it, mdFormat), "<br>")}
		if withCorrection {
			c := mdText(it.Correction)
			if it.Error != "" {
				c = strings.TrimSpace(c + " ❌ " + mdText(truncate(oneLine(it.Error), 200)))
			}
			cols = append(cols, c)
		}
		rows = append(rows, "| "+strings.Join(cols, " | ")+" |\n")
	}
	return rows, head
}

// mdValue formats a value as object.Display does, as inline code of at most width characters.
func mdValue(v any, width int) string {
	return mdCode(object.Display(v), width)
}

func mdDetailBlocks(r Report) []string {
	var blocks []string
	for _, it := range r.Items {
		if len(it.Fields) == 0 {
			continue
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "**%s** · %s", md.Code(it.Object.String()), md.Text(string(it.Category)))
		if it.Source != "" {
			fmt.Fprintf(&sb, " · %s", md.Code(it.Source))
		}
		sb.WriteString("\n\n| Field | Git | Live | Manager | Operation | Time (UTC) |\n|---|---|---|---|---|---|\n")
		for _, f := range it.Fields {
			git, live := mdValue(f.Desired, detailValueWidth), mdValue(f.Live, detailValueWidth)
			manager := mdCodeOrDash(f.Manager)
			if f.Inferred && f.Manager != "" {
				manager += " _(inferred)_"
			}
			when := "-"
			if f.Time != nil && !f.Time.IsZero() {
				when = f.Time.UTC().Format(timeLayout)
			}
			fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", mdCode(f.Path, 0), git, live, manager, orDash(mdText(f.Operation)), when)
		}
		if it.Error != "" {
			fmt.Fprintf(&sb, "\nCorrection failed: %s\n", md.Code(truncate(oneLine(it.Error), detailValueWidth)))
		}
		sb.WriteString("\n")
		blocks = append(blocks, sb.String())
	}
	return blocks
}

// mdHistoryRows are the rows of the history, newest first so that a cut keeps the latest.
func mdHistoryRows(r Report) []string {
	rows := make([]string, 0, len(r.History))
	for i := len(r.History) - 1; i >= 0; i-- {
		e := r.History[i]
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s |\n", e.Time.UTC().Format(timeLayout), mdText(e.Text()),
			mdText(string(e.Item.Category)), mdCode(e.Item.Object.String(), 0), mdCodeOrDash(by(e.Item))))
	}
	return rows
}

// mdCode formats s as inline code in a table cell, at most width characters (0: no limit).
func mdCode(s string, width int) string {
	return md.CodeCell(truncate(oneLine(s), width))
}

func mdCodeOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return mdCode(s, 0)
}

// mdText escapes plain text for a table cell: markdown punctuation, HTML, newlines, mentions.
func mdText(s string) string { return md.Text(s) }
