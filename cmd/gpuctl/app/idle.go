package app

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/usage"
)

// idleOptions are the flags of gpuctl idle.
type idleOptions struct {
	metricsOptions
	idle usage.IdleOptions
	// policy is a gpuctl-policy.yaml whose idle rules the POLICY column applies.
	policy string
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
			var policy *review.Policy
			if o.policy != "" {
				data, err := os.ReadFile(o.policy)
				if err != nil {
					return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("--policy: %w", err)}
				}
				if policy, err = review.ParsePolicy(o.policy, data); err != nil {
					return &ExitError{Code: ExitTrouble, Err: err}
				}
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
				For: usage.Duration(o.idle.For), Items: rows, Policy: idlePolicy(policy, rows, o.idle.Threshold)}, o.output)
		},
	}
	o.bind(cmd, "the jobs of this namespace")
	f := cmd.Flags()
	f.Float64Var(&o.idle.Threshold, "threshold", usage.DefaultIdleThreshold, "a GPU below this utilization (percent) is idle")
	f.DurationVar(&o.idle.Window, "window", defaultIdleWindow, "how far back to look")
	f.DurationVar(&o.idle.For, "for", defaultIdleFor, "the shortest idle run that lists a job")
	f.DurationVar(&o.idle.Step, "step", 0, "the resolution of the runs (default: the window / 120, at least 15s)")
	f.StringVar(&o.policy, "policy", "", "a gpuctl-policy.yaml: a POLICY column says what its idle rules do to each job (the daemon applies the repository's)")
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
	// Policy is, with --policy, what its idle rules do to each job, by job id.
	Policy map[string]string `json:"policy,omitempty"`
}

// idlePolicy says what the policy's idle rules do to each row, by job id; nil without a
// policy. The runs are the audit's, at its threshold: a rule of another threshold is named
// with its own.
func idlePolicy(p *review.Policy, rows []usage.IdleJob, threshold float64) map[string]string {
	if p == nil {
		return nil
	}
	out := map[string]string{}
	for _, j := range rows {
		r := p.IdleRuleFor(j.Namespace, j.Kind)
		if r == nil {
			out[j.JobID] = "none"
			continue
		}
		what := r.Name + ": "
		now, at := time.Duration(j.Now), r.For
		switch {
		case j.NoSeries:
			what += "never paused (no series)"
		case now >= at:
			what += r.Action + " due (idle " + windowText(now) + ", rule " + windowText(at) + ")"
		case r.WarnBefore > 0 && now >= at-r.WarnBefore:
			what += "warned: " + r.Action + " in " + windowText(at-now)
		default:
			what += r.Action + " at " + windowText(at) + " idle"
		}
		if r.Threshold != threshold {
			what += fmt.Sprintf(" (its threshold %g%%)", r.Threshold)
		}
		out[j.JobID] = what
	}
	return out
}

// noSeries fills the idle columns of a job whose GPUs have no series.
const noSeries = "no series"

// printIdle prints the rows of gpuctl idle.
func printIdle(w io.Writer, r IdleReport, output string) error {
	return printList(w, output, r, r.Items, listColumns[usage.IdleJob]{
		head: append([]string{"NAMESPACE", "JOB", "KIND", "GPUS", "IDLE-NOW", "LONGEST-IDLE", "AVG-UTIL", "GPU-MEM-HELD"}, policyHead(r.Policy)...),
		wide: []string{"POOL", "GPU TYPE", "LONGEST-IDLE-FROM", "LONGEST-IDLE-TO"},
		cells: func(j usage.IdleJob, wide bool) []string {
			c := []string{j.Namespace, j.Name, j.Kind, count(j.GPUs)}
			if j.NoSeries {
				c = append(c, noSeries, noSeries, noSeries, noValue)
			} else {
				c = append(c, idleRun(j.Now), idleRun(j.Longest), percentCell(j.AvgUtil), fmt.Sprintf("%.1f GiB", gib(j.MemUsedMiB)))
			}
			if r.Policy != nil {
				c = append(c, r.Policy[j.JobID])
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

// policyHead is the POLICY column's head with --policy.
func policyHead(p map[string]string) []string {
	if p == nil {
		return nil
	}
	return []string{"POLICY"}
}

// idleRun is an idle run in full, as PromQL writes a duration: "1h55m", "0s" for none.
func idleRun(d usage.Duration) string { return windowText(time.Duration(d)) }
