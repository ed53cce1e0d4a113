package app

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
)

// logsOptions are the flags of gpuctl logs.
type logsOptions struct {
	read      readOptions
	namespace string
	opts      cluster.LogOptions
	color     string
	// fleet finds the job in the cluster of the fleet that has it.
	fleet fleetOptions
}

func newLogsCommand(s Streams) *cobra.Command {
	o := logsOptions{opts: cluster.DefaultLogOptions()}
	cmd := &cobra.Command{
		Use:   "logs JOB",
		Short: "Print the logs of a job's pods, one prefix per pod (per rank of a multi-node job)",
		Long: `Print the log lines of every pod of a job, each prefixed by its source: [rank-<i>] for a
pod of a multi-node training (an indexed Job), else [<pod name>], with /<container> when a pod
has several containers. Prefixes are coloured on a terminal.

JOB is <namespace>.<name>, or a name that one namespace has (or with -n). By default the job's
current pods are shown: a pod that failed and was replaced only with --all-pods. With -f the
lines come as they are written, and pods that start or restart meanwhile are picked up, until
Ctrl-C. Exits 1 when the job is unknown or no container of it has started yet, 2 when the
name is ambiguous (the error lists the candidates). --clusters a,b or --all-clusters find the
job in the cluster of the config file's clusters: list that has it. A job that Kueue's
MultiKueue runs in a worker cluster is read there, through the clusters: entry of the
worker's name (without one, exit 1 says what to add), when the job there is MultiKueue's copy
of this one (else exit 1).`,
		Example: `  gpuctl logs alice.qwen2-sft -f
  gpuctl logs qwen2-sft --tail 20 --grep loss
  gpuctl logs qwen2-sft --pod qwen2-sft-1-x7k2p --previous`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobs(&o.read),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r cluster.Model
			var err error
			if o.fleet.on() {
				r, err = o.fleet.jobModel(cmd.Context(), s.Err, jobID(o.namespace, args[0]))
			} else {
				r, err = o.read.Model(s.Err)
			}
			if err != nil {
				return err
			}
			paint := logPainter(s.Out, o.color)
			emit := func(l cluster.LogLine) error {
				_, err := fmt.Fprintln(s.Out, l.Format(paint))
				return err
			}
			err = r.Logs(cmd.Context(), jobID(o.namespace, args[0]), o.opts, emit)
			var elsewhere *cluster.NoLogsError
			if !errors.As(err, &elsewhere) || elsewhere.Cluster == "" {
				return readError(err)
			}
			// MultiKueue runs the job in a worker cluster: its logs are there, in its copy.
			w, err := workerModel(s.Err, elsewhere.JobID, elsewhere.Cluster, "logs")
			if err != nil {
				return err
			}
			copied, err := w.Job(cmd.Context(), elsewhere.JobID)
			if err != nil {
				return workerError(elsewhere.Cluster, err)
			}
			if err := checkCopy(elsewhere.Cluster, elsewhere.JobID, elsewhere.Workload, copied.Queue); err != nil {
				return err
			}
			return workerError(elsewhere.Cluster, w.Logs(cmd.Context(), elsewhere.JobID, o.opts, emit))
		},
	}
	f := cmd.Flags()
	o.read.BindFlags(f)
	f.StringVarP(&o.namespace, "namespace", "n", "", "the job's namespace (else JOB is <namespace>.<name> or a name one namespace has)")
	f.BoolVarP(&o.opts.Follow, "follow", "f", false, "stream new lines and pick up pods that start or restart, until interrupted")
	f.Int64Var(&o.opts.Tail, "tail", -1, "the last N lines of each container (-1: all)")
	f.DurationVar(&o.opts.Since, "since", 0, "only lines newer than this, e.g. 10m or 2h (0: all)")
	f.StringVar(&o.opts.Grep, "grep", "", "only lines that contain this word")
	f.StringVar(&o.opts.Pod, "pod", "", "only this pod of the job")
	f.BoolVar(&o.opts.AllPods, "all-pods", false, "also the pods that have terminated, when the job has newer ones")
	f.BoolVarP(&o.opts.Previous, "previous", "p", false, "the log of each container's previous instance (after a restart)")
	f.StringVar(&o.color, "color", "auto", "colour the prefixes: auto (when a terminal), always or never")
	o.fleet.BindFlags(f)
	cmd.MarkFlagsMutuallyExclusive("pod", "all-pods")
	cmd.MarkFlagsMutuallyExclusive("follow", "previous")
	return cmd
}

// jobID is the job id of a command's JOB argument: <namespace>.<name> with -n, else as given.
func jobID(namespace, job string) string {
	if namespace == "" || strings.Contains(job, ".") {
		return job
	}
	return namespace + "." + job
}

// completeJobs completes a JOB argument with the job ids of the read model.
func completeJobs(ro *readOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		m, err := ro.Model(io.Discard)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list, err := m.Jobs(cmd.Context(), cluster.JobFilter{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ids := make([]string, len(list.Items))
		for i, j := range list.Items {
			ids[i] = j.JobID
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// readError maps the errors of the read model to exit codes, as kubectl get and describe
// do: an unknown job, pool, node, quota user or pod, and a job with no log yet, are 1 (the
// answer is no); an ambiguous job name, a refused option or filter, or a failed read is 2. An
// *ExitError keeps its code.
func readError(err error) error {
	if err == nil || errors.As(err, new(*ExitError)) {
		return err
	}
	if errors.As(err, new(*cluster.NoLogsError)) || errors.As(err, new(*cluster.NotFoundError)) {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	return &ExitError{Code: ExitTrouble, Err: err}
}

// logPainter colours each log prefix in a colour of its own (term.Palette.Source), or
// returns nil (plain text) when w is not a terminal or --color says never.
func logPainter(w io.Writer, mode string) func(string) string {
	pal := newPalette(w, mode)
	if !pal.On {
		return nil
	}
	return pal.Source
}
