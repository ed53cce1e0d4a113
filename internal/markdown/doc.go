// Package markdown escapes the values that gpuctl's Markdown output (PR review comments, drift
// reports) prints. Names, namespaces, file paths, messages and field values come from files
// and live objects that someone else wrote: each goes through exactly one of these functions,
// chosen by where it lands, so that a newline, a pipe, a backtick, HTML, a link or an @mention
// in it stays text and cannot end a table cell, start a heading or ping anyone. MaxChars is
// the one size limit of every such document.
//
//	fmt.Fprintf(w, "| %s | %s |\n", markdown.CodeCell(obj), markdown.Text(msg)) // a table row
//	fmt.Fprintf(w, "in %s\n", markdown.Code(path))                            // inline code
//	fmt.Fprintf(w, "<summary>%s</summary>\n", markdown.HTML(id))              // raw HTML
//	f := markdown.Fence(body)                                                 // a code block
package markdown
