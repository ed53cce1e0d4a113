package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/internal/logging"
	"github.com/gpuctl/gpuctl/internal/version"
	"github.com/gpuctl/gpuctl/nodelabeler"
	"github.com/gpuctl/gpuctl/nodelabeler/nvmlinfo"
)

// NewCommand builds the gpuctl-node-labeler command.
func NewCommand() *cobra.Command {
	opts := nodelabeler.DefaultOptions()
	var logOpts logging.Options
	var ko kube.Options
	cmd := &cobra.Command{
		Use:   "gpuctl-node-labeler",
		Short: "Publish the node's GPUs, as NVML reports them, as g8s.host/ node labels",
		Long: `gpuctl-node-labeler asks NVML what GPUs this node has and publishes them on its Node
with server-side apply (field manager gpuctl-node-labeler): g8s.host/gpu-type, gpu-product,
gpu-count, gpu-memory, gpu-family, driver-version, cuda-version, and gpu-types-mixed and
mig-enabled when they apply. Without a usable NVIDIA driver it publishes gpu-count=0 alone and
keeps running; NVML is initialised afresh on every pass.

With --dry-run it prints the labels it would publish, as sorted key=value lines, and exits: no
cluster, kubeconfig or node name is needed (without a usable driver it exits non-zero, saying
why).`,
		Example: `  NODE_NAME=gpu-0 gpuctl-node-labeler
  gpuctl-node-labeler --node-name gpu-0 --nvml mock:dgxh100 --oneshot --kubeconfig ~/.kube/config
  gpuctl-node-labeler --nvml real --dry-run`,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			log, err := logOpts.Logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			lib, err := nvmlinfo.Open(opts.NVML)
			if err != nil {
				return fmt.Errorf("--nvml: %w", err)
			}
			if opts.DryRun {
				return nodelabeler.DryRun(lib, cmd.OutOrStdout(), log)
			}
			client, err := ko.Clientset(kube.UserAgent("gpuctl-node-labeler"))
			if err != nil {
				return err
			}
			l := &nodelabeler.Labeler{NVML: lib, Nodes: client.CoreV1().Nodes(), Node: opts.NodeName, Log: log}
			log.Info("starting", "version", version.String(), "node", opts.NodeName, "nvml", opts.NVML,
				"interval", opts.Interval, "oneshot", opts.Oneshot)
			if opts.Oneshot {
				_, err := l.Pass(cmd.Context())
				return err
			}
			return l.Run(cmd.Context(), opts.Interval)
		},
	}
	opts.BindFlags(cmd.Flags())
	logOpts.BindFlags(cmd.Flags())
	ko.BindFlags(cmd.Flags())
	return cmd
}
