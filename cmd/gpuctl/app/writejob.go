package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/edit"
)

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
	// flags adds the verb's own flags; check checks them.
	flags func(cmd *cobra.Command)
	check func() error
}

// newJobVerbCommand builds `gpuctl VERB job JOB`, as kubectl's `delete job NAME`: the verb,
// and its job subcommand (newJobWriteCommand).
func newJobVerbCommand(s Streams, verb string, v jobWriteVerb) *cobra.Command {
	cmd := &cobra.Command{
		Use:   verb + " job JOB",
		Short: v.short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return failed(fmt.Errorf("cannot %s %q: only jobs: %s job JOB", verb, args[0], verb))
			}
			return failed(fmt.Errorf("expected %s job JOB", verb))
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return failed(err) })
	v.use = "job JOB"
	cmd.AddCommand(newJobWriteCommand(s, v))
	return cmd
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
			if v.check != nil {
				if err := v.check(); err != nil {
					return failed(err)
				}
			}
			ref := edit.ParseJobRef(args[v.nargs], namespace)
			return runWrite(cmd.Context(), s, &o, func(repo *edit.Repo, _ who) (*edit.Result, error) {
				return v.edit(repo, ref, args[:v.nargs])
			})
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return failed(err) })
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the job's namespace (default: the one namespace of the repository that has a job of that name)")
	if v.flags != nil {
		v.flags(cmd)
	}
	o.BindFlags(cmd.Flags())
	return cmd
}
