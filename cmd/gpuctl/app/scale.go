package app

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/edit"
)

func newScaleCommand(s Streams) *cobra.Command {
	var replicas int
	cmd := newJobWriteCommand(s, jobWriteVerb{
		use:   "scale inference|compute|notebook JOB --replicas N",
		short: "Set the replicas of a service in the repository, and commit it",
		long: `Set service.replicas of an inference, compute or notebook service (a notebook runs 0 or 1) and
commit it with git. Scaling a paused service to 1 or more resumes it.

` + jobArgHelp,
		example: `  gpuctl scale inference llama3-8b --replicas 3
  gpuctl scale compute alice.feature-api --replicas 0 --push --wait`,
		nargs: 1,
		edit: func(repo *edit.Repo, ref edit.JobRef, args []string) (*edit.Result, error) {
			return repo.Scale(args[0], ref, replicas)
		},
		flags: func(cmd *cobra.Command) {
			cmd.Flags().IntVar(&replicas, "replicas", -1, "the number of replicas (required)")
		},
		check: func() error {
			if replicas < 0 {
				return errors.New("give the number of replicas with --replicas N (0 or more)")
			}
			return nil
		},
	})
	cmd.ValidArgs = []string{"inference", "compute", "notebook"}
	return cmd
}
