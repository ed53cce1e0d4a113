package app

import (
	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/edit"
)

func newDeleteCommand(s Streams) *cobra.Command {
	return newJobVerbCommand(s, "delete", jobWriteVerb{
		short: "Remove a job from the repository, and commit it",
		long: `Remove the document that declares JOB from its file (the whole file when it is the file's only
document; else only that document, every byte of the others kept) and commit it with git.
Deleting a file that a kustomization lists is refused, as the repository would not render.

` + jobArgHelp,
		example: `  gpuctl delete job qwen2-7b-sft
  gpuctl delete job alice.qwen2-7b-sft --push --wait
  gpuctl delete job sft -n bob --dry-run`,
		edit: func(repo *edit.Repo, ref edit.JobRef, _ []string) (*edit.Result, error) { return repo.Delete(ref) },
	})
}
