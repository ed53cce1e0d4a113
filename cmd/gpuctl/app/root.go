package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes, as kubectl diff uses them.
const (
	// ExitFailed means the command's answer is "no": invalid files, or differences found.
	ExitFailed = 1
	// ExitTrouble means the command could not do its work.
	ExitTrouble = 2
)

// ExitError carries the process exit code of a command that did its work and answered "no"
// (invalid input, differences found) or failed.
type ExitError struct {
	Code int
	Err  error
}

// Error returns the message of the underlying error, or "" when it was already printed.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *ExitError) Unwrap() error { return e.Err }

// Code returns the exit code for an error returned by a command: 0 for nil.
func Code(err error) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitTrouble
}

// Run runs the gpuctl command line with args until it ends or ctx ends, and returns its exit
// code, Code(err). An error is printed to s.Err as "error: <message>", unless its message is
// empty (the command printed it already). cmd/gpuctl's main is RunProgram with the process's
// argv, which is Run named after argv[0]; tests run the CLI through Run as a user's shell would.
func Run(ctx context.Context, s Streams, args []string) int {
	return run(ctx, s, commandName, args)
}

// run is Run with the name help texts give the CLI (DisplayName).
func run(ctx context.Context, s Streams, name string, args []string) int {
	cmd := NewRootCommand(s)
	setDisplayName(cmd, name)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil && err.Error() != "" {
		fmt.Fprintln(s.Err, "error:", err)
	}
	return Code(err)
}

// Streams are where commands write.
type Streams struct {
	Out io.Writer
	Err io.Writer
}

// NewRootCommand builds the gpuctl command tree.
func NewRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpuctl",
		Short: "GitOps for GPU workloads on Kubernetes",
		Long: `gpuctl turns short YAML files (training jobs, inference services, notebooks, CPU services,
resource pools, per-user quotas) into Kubernetes objects.

  gpuctl validate examples/        check every file, report every problem at once
  gpuctl render examples/          print the Kubernetes objects, ready for kubectl apply -f -
  gpuctl get jobs                  what runs: one row per pod, with its status in words
  gpuctl describe job JOB          why a job is where it is: pods, events, Git source, drift
  gpuctl top jobs                  are the GPUs working: utilization, memory, power (Prometheus)
  gpuctl idle                      jobs whose GPUs stayed idle, by the longest idle run
  gpuctl create -f job.yaml        add a job to the repository as a Git commit (also delete,
                                   pause, resume, scale)`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(newValidateCommand(s), newRenderCommand(s), newDiffCommand(s), newSyncCommand(s), newStatusCommand(s), newDriftCommand(s), newGetCommand(s), newDescribeCommand(s), newTopCommand(s), newIdleCommand(s), newLogsCommand(s), newEventsCommand(s),
		newCreateCommand(s), newDeleteCommand(s), newPauseCommand(s), newResumeCommand(s), newScaleCommand(s), newSecretCommand(s), newVersionCommand(s))
	return root
}

// outputFlag checks -o against the formats a command supports.
func outputFlag(value string, allowed ...string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("unsupported output format %q (allowed: %v)", value, allowed)}
}
