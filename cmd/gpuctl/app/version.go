package app

import (
	"encoding/json"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/version"
	"github.com/spf13/cobra"
)

func newVersionCommand(s Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of gpuctl",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output, "text", "json"); err != nil {
				return err
			}
			info := version.Get()
			if output == "json" {
				b, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(s.Out, string(b))
				return err
			}
			_, err := fmt.Fprintln(s.Out, info.String())
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
