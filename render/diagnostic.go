package render

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/hashicorp/go-multierror"
)

// Severity tells whether a Diagnostic fails validation. review's violations and policies use
// the same type (a policy may also turn a rule off: review.SeverityOff).
type Severity string

const (
	// SeverityError fails validation: nothing is rendered.
	SeverityError Severity = "error"
	// SeverityWarning is reported but does not fail validation.
	SeverityWarning Severity = "warning"
)

// Pos is a position in a source file; Line and Column start at 1, 0 means unknown.
type Pos struct {
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

// Diagnostic is one problem found in one file: an error or a warning.
type Diagnostic struct {
	Severity Severity `json:"severity"`
	File     string   `json:"file"`
	Line     int      `json:"line,omitempty"`
	Column   int      `json:"column,omitempty"`
	// Field is the path of the field in gpuctl spelling, e.g. resources.gpu-type.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Hint suggests a fix, e.g. `did you mean "gpu-type"?`.
	Hint string `json:"hint,omitempty"`
}

// Error formats the diagnostic as file:line:col: field: message (hint).
func (d *Diagnostic) Error() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d", d.Line)
		if d.Column > 0 {
			fmt.Fprintf(&b, ":%d", d.Column)
		}
	}
	b.WriteString(": ")
	if d.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	if d.Hint != "" {
		b.WriteString(", ")
		b.WriteString(d.Hint)
	}
	return b.String()
}

// diagnostics collects the problems of a render.
type diagnostics struct {
	list []*Diagnostic
}

func (ds *diagnostics) add(d *Diagnostic) { ds.list = append(ds.list, d) }

func (ds *diagnostics) errorf(file string, p Pos, field, format string, args ...any) *Diagnostic {
	d := &Diagnostic{Severity: SeverityError, File: file, Line: p.Line, Column: p.Column, Field: field,
		Message: fmt.Sprintf(format, args...)}
	ds.add(d)
	return d
}

func (ds *diagnostics) warnf(file string, p Pos, field, format string, args ...any) *Diagnostic {
	d := ds.errorf(file, p, field, format, args...)
	d.Severity = SeverityWarning
	return d
}

func (ds *diagnostics) hasErrors() bool {
	for _, d := range ds.list {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// sorted returns the diagnostics ordered by file, line, column and message, without duplicates.
func (ds *diagnostics) sorted() []*Diagnostic {
	out := append([]*Diagnostic(nil), ds.list...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Error() < b.Error()
	})
	uniq := out[:0]
	for i, d := range out {
		if i > 0 && d.Error() == out[i-1].Error() {
			continue
		}
		uniq = append(uniq, d)
	}
	return uniq
}

// split separates errors from warnings.
func split(all []*Diagnostic) (errs, warnings []*Diagnostic) {
	for _, d := range all {
		if d.Severity == SeverityError {
			errs = append(errs, d)
		} else {
			warnings = append(warnings, d)
		}
	}
	return errs, warnings
}

// ValidationError is returned when any file has an error; it holds every error of every file.
type ValidationError struct {
	errs *multierror.Error
}

// Error lists every error, one a line.
func (e *ValidationError) Error() string { return e.errs.Error() }

// Diagnostics returns every error of the render, in file and line order.
func (e *ValidationError) Diagnostics() []*Diagnostic {
	out := make([]*Diagnostic, 0, len(e.errs.Errors))
	for _, err := range e.errs.Errors {
		var d *Diagnostic
		if errors.As(err, &d) {
			out = append(out, d)
		}
	}
	return out
}

// NewValidationError returns the *ValidationError of a list of diagnostics (its errors), or
// nil when none is an error: for callers that check files with ParseFile or a render of their
// own and report alike.
func NewValidationError(diags []*Diagnostic) error {
	errs, _ := split(diags)
	return newValidationError(errs)
}

func newValidationError(errs []*Diagnostic) error {
	if len(errs) == 0 {
		return nil
	}
	me := &multierror.Error{ErrorFormat: formatErrors}
	for _, d := range errs {
		me = multierror.Append(me, d)
	}
	return &ValidationError{errs: me}
}

func formatErrors(errs []error) string {
	lines := make([]string, len(errs))
	for i, err := range errs {
		lines[i] = err.Error()
	}
	return humanize.Plural(len(errs), "error") + ":\n" + strings.Join(lines, "\n")
}

// Unwrap lets errors.As find individual diagnostics.
func (e *ValidationError) Unwrap() []error { return e.errs.Errors }
