package app

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/usage"
)

// idleOptions are the flags of gpuctl idle.
type idleOptions struct {
	metricsOptions
	idle usage.IdleOptions
}

// Defaults of gpuctl idle (usage.IdleOptions' own).
const (
	defaultIdleWindow = 3 * time.Hour
	defaultIdleFor    = 30 * time.Minute
)

func newIdleCommand(s Streams) *cobra.Command {
	var o idleOptions
	cmd := &cobra.Command{
		Use:   "idle",
		Short: "List the jobs whose GPUs stayed idle, by their longest idle run",
		Long: `Audit the running jobs that hold GPUs: list each one whose GPUs all stayed below
--threshold (5% utilization) for at least --for (30m) in a row within the last --window (3h),
read from the Prometheus that scrapes NVIDIA's dcgm-exporter (--prometheus-url or
$GPUCTL_PROMETHEUS_URL; docs/metrics.md).

A job is listed by its longest idle run, not by its average: a job busy for its first hour and
idle for the next two averages 33%, and holds its GPUs for nothing all the same. IDLE-NOW is
the idle run going on now (0s when the job is busy at the end of the window), LONGEST-IDLE the
longest run in the window, AVG-UTIL the utilization averaged over the window and the job's
GPUs, GPU-MEM-HELD the GPU memory its GPUs hold now (a loaded model holds memory at 0%).
A burst shorter than --step still ends a run: each step counts the busiest GPU's highest value.

Jobs whose GPUs have no series at all (no exporter on the node, or one without pod labels)
are listed after the others with "no series": their GPUs are allocated, their use unknown.
Jobs are those of -n, of every namespace with -A, else of the kubeconfig context's namespace.
The exit code is 0 whether or not a job is listed; without a Prometheus it is 2.`,
		Example: `  gpuctl idle -A
  gpuctl idle -n alice --threshold 10 --window 24h --for 2h -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkWindow("window", o.idle.Window); err != nil {
				return err
			}
			if err := checkWindow("for", o.idle.For); err != nil {
				return err
			}
			if o.idle.Step < 0 {
				return checkWindow("step", o.idle.Step)
			}
			if o.idle.Threshold <= 0 || o.idle.Threshold > 100 {
				return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("--threshold %g: want a utilization in percent, above 0 and at most 100", o.idle.Threshold)}
			}
			pc, m, ns, err := o.start(cmd)
			if err != nil {
				return err
			}
			pods, err := m.JobPods(cmd.Context(), cluster.JobPodFilter{Namespace: ns})
			if err != nil {
				return readError(err)
			}
			rows, err := pc.Idle(cmd.Context(), metricsScope(ns), pods.UsagePods(), o.idle)
			if err != nil {
				return metricsError(err)
			}
			if rows == nil {
				rows = []usage.IdleJob{}
			}
			if len(rows) == 0 && o.output != outputJSON && o.output != outputYAML {
				fmt.Fprintf(s.Err, "No job was idle below %g%% for %s in the last %s.\n", o.idle.Threshold, windowText(o.idle.For), windowText(o.idle.Window))
				return nil
			}
			return printIdle(s.Out, IdleReport{Threshold: o.idle.Threshold, Window: usage.Duration(o.idle.Window),
				For: usage.Duration(o.idle.For), Items: rows}, o.output)
		},
	}
	o.bind(cmd, "the jobs of this namespace")
	f := cmd.Flags()
	f.Float64Var(&o.idle.Threshold, "threshold", usage.DefaultIdleThreshold, "a GPU below this utilization (percent) is idle")
	f.DurationVar(&o.idle.Window, "window", defaultIdleWindow, "how far back to look")
	f.DurationVar(&o.idle.For, "for", defaultIdleFor, "the shortest idle run that lists a job")
	f.DurationVar(&o.idle.Step, "step", 0, "the resolution of the runs (default: the window / 120, at least 15s)")
	return cmd
}

// IdleReport is what gpuctl idle -o json|yaml prints: the audit's settings and its rows.
type IdleReport struct {
	// Threshold is the utilization in percent below which a GPU is idle.
	Threshold float64 `json:"threshold"`
	// Window is how far back the audit looked, For the shortest idle run it lists.
	Window usage.Duration  `json:"window"`
	For    usage.Duration  `json:"for"`
	Items  []usage.IdleJob `json:"items"`
}

// noSeries fills the idle columns of a job whose GPUs have no series.
const noSeries = "no series"

// printIdle prints the rows of gpuctl idle.
func printIdle(w io.Writer, r IdleReport, output string) error {
	return printList(w, output, r, r.Items, listColumns[usage.IdleJob]{
		head: []string{"NAMESPACE", "JOB", "KIND", "GPUS", "IDLE-NOW", "LONGEST-IDLE", "AVG-UTIL", "GPU-MEM-HELD"},
		wide: []string{"POOL", "GPU TYPE", "LONGEST-IDLE-FROM", "LONGEST-IDLE-TO"},
		cells: func(j usage.IdleJob, wide bool) []string {
			c := []string{j.Namespace, j.Name, j.Kind, count(j.GPUs)}
			if j.NoSeries {
				c = append(c, noSeries, noSeries, noSeries, noValue)
			} else {
				c = append(c, idleRun(j.Now), idleRun(j.Longest), percentCell(j.AvgUtil), fmt.Sprintf("%.1f GiB", gib(j.MemUsedMiB)))
			}
			if wide {
				from, to := orNone(""), orNone("")
				if !j.LongestFrom.IsZero() {
					from, to = j.LongestFrom.UTC().Format(time.RFC3339), j.LongestTo.UTC().Format(time.RFC3339)
				}
				c = append(c, orNone(j.Pool), orNone(j.GPUType), from, to)
			}
			return c
		},
	})
}

// idleRun is an idle run in full, as PromQL writes a duration: "1h55m", "0s" for none.
func idleRun(d usage.Duration) string { return windowText(time.Duration(d)) }
