package app

import (
	"errors"
	"fmt"

	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/render"
	"github.com/spf13/cobra"
)

// validateReport is the -o json form of gpuctl validate.
type validateReport struct {
	Valid     bool                 `json:"valid"`
	Files     int                  `json:"files"`
	Documents int                  `json:"documents"`
	Objects   int                  `json:"objects"`
	Errors    []*render.Diagnostic `json:"errors"`
	Warnings  []*render.Diagnostic `json:"warnings"`
}

func newValidateCommand(s Streams) *cobra.Command {
	var ro options.Render
	var output string
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check gpuctl files and report every problem of every file",
		Long: `Check gpuctl files (directories are read recursively) and report every error and warning
with file, line, column and field. Exit code 0: valid; 1: invalid; 2: could not run.`,
		Example: `  gpuctl validate examples/
  gpuctl validate train.yaml serve.yaml -o json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output, "text", "json"); err != nil {
				return err
			}
			r, err := renderer(&ro)
			if err != nil {
				return err
			}
			rep := validateReport{Errors: []*render.Diagnostic{}, Warnings: []*render.Diagnostic{}}
			for _, p := range args {
				res, err := r.RenderContext(cmd.Context(), diskFS(), p)
				var ve *render.ValidationError
				if err != nil && !errors.As(err, &ve) {
					return &ExitError{Code: ExitTrouble, Err: err}
				}
				rep.Files += len(res.Files)
				rep.Documents += len(res.Documents)
				rep.Objects += len(res.Objects)
				rep.Errors = append(rep.Errors, res.Errors()...)
				rep.Warnings = append(rep.Warnings, res.Warnings()...)
			}
			rep.Valid = len(rep.Errors) == 0
			if output == "json" {
				if err := writeJSON(s.Out, rep); err != nil {
					return err
				}
			} else {
				printValidateText(s, rep)
			}
			if !rep.Valid {
				return &ExitError{Code: ExitFailed}
			}
			return nil
		},
	}
	ro.BindFlags(cmd.Flags())
	ro.BindClusterFlag(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func printValidateText(s Streams, rep validateReport) {
	all := append(append([]*render.Diagnostic{}, rep.Errors...), rep.Warnings...)
	for _, d := range all {
		fmt.Fprintln(s.Out, d.Error())
	}
	summary := humanize.Plural(rep.Files, "file") + ", " + humanize.Plural(rep.Documents, "document")
	switch {
	case !rep.Valid:
		fmt.Fprintf(s.Out, "invalid: %s: %s, %s\n", summary, humanize.Plural(len(rep.Errors), "error"), humanize.Plural(len(rep.Warnings), "warning"))
	default:
		fmt.Fprintf(s.Out, "valid: %s, %s rendered, %s\n", summary, humanize.Plural(rep.Objects, "object"), humanize.Plural(len(rep.Warnings), "warning"))
	}
}
