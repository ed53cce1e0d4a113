package app

import (
	"errors"
	"fmt"

	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/render"
	"github.com/spf13/cobra"
)

func newRenderCommand(s Streams) *cobra.Command {
	var ro options.Render
	var output string
	var showSecrets bool
	cmd := &cobra.Command{
		Use:   "render PATH",
		Short: "Print the Kubernetes objects that gpuctl files render to",
		Long: `Render gpuctl files (a directory is read recursively, kustomizations included) into
Kubernetes objects: a multi-document YAML stream ready for kubectl apply -f -, or a JSON List.
Warnings go to standard error. SOPS-encrypted files are printed sealed (their values left out,
as without keys) unless --show-secrets asks for them decrypted with --age-keys: the output then
holds the Secrets' values in clear, as sops --decrypt would print them.
Exit code 0: rendered; 1: invalid input; 2: could not run.`,
		Example: `  gpuctl render examples/
  gpuctl render examples/training/qwen2-72b-fullft.yaml -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output, "yaml", "json"); err != nil {
				return err
			}
			opts, err := ro.Options()
			if err != nil {
				return &ExitError{Code: ExitTrouble, Err: err}
			}
			if !showSecrets {
				opts.Decryptor = nil // values are printed only when asked for
			}
			res, err := render.New(opts).RenderContext(cmd.Context(), diskFS(), args[0])
			var ve *render.ValidationError
			if errors.As(err, &ve) {
				for _, d := range res.Diagnostics {
					fmt.Fprintln(s.Err, d.Error())
				}
				return &ExitError{Code: ExitFailed}
			}
			if err != nil {
				return &ExitError{Code: ExitTrouble, Err: err}
			}
			for _, d := range res.Warnings() {
				fmt.Fprintln(s.Err, d.Error())
			}
			var out []byte
			if output == "json" {
				out, err = render.MarshalJSON(res.Objects)
			} else {
				out, err = render.MarshalYAML(res.Objects)
			}
			if err != nil {
				return err
			}
			_, err = s.Out.Write(out)
			return err
		},
	}
	ro.BindFlags(cmd.Flags())
	ro.BindClusterFlag(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	cmd.Flags().BoolVar(&showSecrets, "show-secrets", false, "decrypt SOPS-encrypted files with --age-keys and print their values (default: sealed, without values)")
	return cmd
}
