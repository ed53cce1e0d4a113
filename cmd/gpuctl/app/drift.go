package app

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"
)

// driftOptions are the flags of gpuctl drift.
type driftOptions struct {
	output   string
	since    string
	exitCode bool
}

func newDriftCommand(s Streams) *cobra.Command {
	var ro readOptions
	var o driftOptions
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "Show where the cluster differs from Git, who changed it, and GPU workloads not in Git",
		Long: `Read the drift report that gpuctl-reconciler keeps in its namespace (ConfigMap gpuctl-drift):
where the cluster differs from the last applied revision, who made it differ (the field
manager: kubectl-edit, helm, ...) and when. Items are of six categories:

  modified      a field that gpuctl applies has another value in the cluster, or is gone
  deleted       an object that Git declares was deleted from the cluster by hand
  node-label    a pool label that gpuctl sets on a node was changed or removed by hand
  node-missing  a pool names a node that does not exist
  gpu-type      a pool declares a gpu-type other than the one the node labeler found
  shadow        a workload requesting GPUs in a managed namespace that is not in Git

The current drift is always listed, however old; the changes of the last --since (detected,
changed, resolved, corrected, shadow-deleted) follow it. Needs only a kubeconfig that can
read ConfigMaps in that namespace, or the daemon's API (--server, $GPUCTL_SERVER) and a
token: a team's token sees the drift of its namespaces.

Exit status: 0, or 1 with --exit-code when the report lists drift (like git diff
--exit-code, for a cron job or a CI step that alerts); 2 when the report cannot be read.`,
		Example: `  gpuctl drift
  gpuctl drift --since 7d
  gpuctl drift --since 0 -o markdown > drift.md
  gpuctl drift -o json | jq '.items[] | select(.category == "shadow")'
  gpuctl drift --exit-code >/dev/null || echo "the cluster has drifted from Git"
  gpuctl drift --server https://gpuctl.example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			since, err := o.validate()
			if err != nil {
				return err
			}
			rec, err := ro.Records(s.Err)
			if err != nil {
				return err
			}
			return runDrift(cmd.Context(), s.Out, rec, o, since, time.Now())
		},
	}
	ro.BindRecordFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json, yaml or markdown")
	cmd.Flags().StringVar(&o.since, "since", "24h", "show the changes of this last period (30m, 24h, 7d); 0 for all that are kept")
	cmd.Flags().BoolVar(&o.exitCode, "exit-code", false, "exit 1 when the report lists drift")
	return cmd
}

// validate checks the flags before any cluster is contacted and returns --since.
func (o *driftOptions) validate() (time.Duration, error) {
	if err := outputFlag(o.output, "text", "json", "yaml", "markdown"); err != nil {
		return 0, err
	}
	since, err := parseSince(o.since)
	if err != nil {
		return 0, &ExitError{Code: ExitTrouble, Err: fmt.Errorf("--since: %w", err)}
	}
	return since, nil
}

// parseSince reads a duration such as 30m, 24h or 7d (days are not Go durations); 0 means all.
func parseSince(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n float64
		n, err = strconv.ParseFloat(days, 64)
		d = time.Duration(n * float64(24*time.Hour))
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 30m, 24h or 7d (0 for all)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// runDrift reads the report with the history of the last since, prints it and maps the
// report to the exit code.
func runDrift(ctx context.Context, w io.Writer, rec records, o driftOptions, since time.Duration, now time.Time) error {
	r, err := rec.Drift(ctx, since, now)
	if err != nil {
		return &ExitError{Code: ExitTrouble, Err: err}
	}
	if err := printDrift(w, r, o.output, now); err != nil {
		return &ExitError{Code: ExitTrouble, Err: err}
	}
	return driftExit(r, o.exitCode)
}

// printDrift prints the report, with the history that Since attached to it.
func printDrift(w io.Writer, rep drift.Report, output string, now time.Time) error {
	switch output {
	case "json":
		return drift.WriteJSON(w, rep)
	case "yaml":
		b, err := sigsyaml.Marshal(drift.NewDocument(rep))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "markdown":
		return drift.WriteMarkdown(w, rep, now)
	}
	return drift.WriteText(w, rep, now)
}

// driftExit is the answer of --exit-code: ExitFailed (silently, like git diff --exit-code)
// when the report lists drift.
func driftExit(r drift.Report, exitCode bool) error {
	if exitCode && (len(r.Items) > 0 || r.Truncated > 0) {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}
