package app

import (
	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/edit"
)

func newDeleteCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete job JOB",
		Short: "Remove a job from the repository, and commit it",
		Long: `Remove the document that declares a job from a clone of the GitOps repository and commit it:
the reconciler deletes the job's objects once the commit is pushed (--push).`,
		Args: writeArgs(0, "job JOB"),
	}
	cmd.AddCommand(newJobWriteCommand(s, jobWriteVerb{
		use:   "job JOB",
		short: "Remove a job's document from the repository, and commit it",
		long: `Remove the document that declares JOB from its file (the whole file when it is the file's only
document; else only that document, every byte of the others kept) and commit it with git.
Deleting a file that a kustomization lists is refused, as the repository would not render.

` + jobArgHelp,
		example: `  gpuctl delete job qwen2-7b-sft
  gpuctl delete job alice.qwen2-7b-sft --push --wait
  gpuctl delete job sft -n bob --dry-run`,
		edit: func(repo *edit.Repo, ref edit.JobRef, _ []string) (*edit.Result, error) { return repo.Delete(ref) },
	}))
	return cmd
}

// jobArgHelp describes JOB in the help of the write verbs.
const jobArgHelp = `JOB is <namespace>.<name>, or a name with -n NAMESPACE, or a bare name that one namespace of
the repository has (a name that several have is an error that lists them).

Exit code 0: committed (or, with --dry-run, the diff printed); 1: refused or failed, nothing
committed.`

// jobWriteVerb is a write verb on one job.
type jobWriteVerb struct {
	use, short, long, example string
	// nargs are the arguments before JOB (scale's kind); the job is the last.
	nargs int
	edit  func(repo *edit.Repo, ref edit.JobRef, args []string) (*edit.Result, error)
	// flags adds the verb's own flags.
	flags func(cmd *cobra.Command)
}

// newJobWriteCommand builds a write verb on one job: JOB, -n and the write flags.
func newJobWriteCommand(s Streams, v jobWriteVerb) *cobra.Command {
	var o writeOptions
	var namespace string
	cmd := &cobra.Command{
		Use:     v.use,
		Short:   v.short,
		Long:    v.long,
		Example: v.example,
		Args:    writeArgs(v.nargs+1, v.use),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := edit.ParseJobRef(args[v.nargs], namespace)
			return runWrite(cmd.Context(), s, &o, func(repo *edit.Repo, _ who) (*edit.Result, error) {
				return v.edit(repo, ref, args[:v.nargs])
			})
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the job's namespace (default: the one namespace of the repository that has a job of that name)")
	if v.flags != nil {
		v.flags(cmd)
	}
	o.BindFlags(cmd.Flags())
	return cmd
}
