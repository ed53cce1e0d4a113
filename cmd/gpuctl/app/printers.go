package app

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/internal/term"
)

// The -o formats of the read verbs, as kubectl names them; "" is the table.
const (
	outputWide = "wide"
	outputJSON = "json"
	outputYAML = "yaml"
	outputName = "name"
)

// writeYAML writes v as YAML, with the field names of its JSON.
func writeYAML(w io.Writer, v any) error {
	b, err := sigsyaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writeData writes v as -o json or yaml and reports whether output was one of them.
func writeData(w io.Writer, output string, v any) (bool, error) {
	switch output {
	case outputJSON:
		return true, writeJSON(w, v)
	case outputYAML:
		return true, writeYAML(w, v)
	}
	return false, nil
}

// columnGap is the space between the columns of a table, as kubectl leaves it.
const columnGap = 3

// table writes rows in columns aligned with spaces, as kubectl's tables are. Its widths only
// grow, so that a watch prints later rows under the columns of the first ones.
type table struct {
	widths []int
	indent string
}

// fit widens the columns to the cells of rows.
func (t *table) fit(rows ...[]string) {
	for _, r := range rows {
		for i, c := range r {
			if i >= len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
		}
	}
}

// write fits the rows and writes them, the last cell of each unpadded.
func (t *table) write(w io.Writer, rows ...[]string) error {
	// cells hold text that objects' authors wrote: no control character reaches the terminal
	safe := make([][]string, len(rows))
	for i, r := range rows {
		safe[i] = make([]string, len(r))
		for j, c := range r {
			safe[i][j] = term.Printable(c)
		}
	}
	rows = safe
	t.fit(rows...)
	var sb strings.Builder
	for _, r := range rows {
		sb.WriteString(t.indent)
		for i, c := range r {
			sb.WriteString(c)
			if i < len(r)-1 {
				sb.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)+columnGap))
			}
		}
		sb.WriteByte('\n')
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// orNone is s, or object.None for a missing value.
func orNone(s string) string {
	if s == "" {
		return object.None
	}
	return s
}

// ageOf is kubectl's AGE of something created at t.
func ageOf(now, t time.Time) string {
	if t.IsZero() {
		return object.None
	}
	return humanize.Age(now.Sub(t))
}

// count prints an integer.
func count[N ~int | ~int32 | ~int64](n N) string { return fmt.Sprint(n) }
