package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// statusFleet is gpuctl status over the fleet (--clusters, --all-clusters): one row per
// cluster with its reconciler's revision, result, last sync and message; a cluster that cannot
// be read is a row that says so, and exit code 1. -o json|yaml lists each cluster's status
// with its "cluster", and the clusters that could not be read. A cluster whose reconciler
// names another is a warning (warnMislabelled).
func statusFleet(cmd *cobra.Command, s Streams, fleet *fleetOptions, output string) error {
	if fleet.flags != nil && fleet.flags.Changed("namespace") {
		return trouble(fmt.Errorf("--namespace reads one cluster: set a cluster's namespace: in %s", configHint))
	}
	clusters, err := fleet.selected(s.Err)
	if err != nil {
		return err
	}
	answers := readFleet(cmd.Context(), clusters, func(ctx context.Context, c fleetCluster) ([]daemon.Status, error) {
		rec, err := c.records()
		if err != nil {
			return nil, err
		}
		st, err := rec.Status(ctx)
		if err != nil {
			return nil, err
		}
		return []daemon.Status{st}, nil
	})
	warnMislabelled(s.Err, answers)
	switch output {
	case outputJSON, outputYAML:
		return printFleet(s.Out, s.Err, output, "clusters", answers, listColumns[daemon.Status]{})
	}
	return printStatusFleet(s.Out, answers, time.Now())
}

// warnMislabelled warns of each cluster whose reconciler names its cluster (its --cluster,
// daemon.Status.Cluster) otherwise than the config file's entry does: the entry may read
// another cluster than its name says. A reconciler without --cluster names none.
func warnMislabelled(w io.Writer, answers []clusterAnswer[daemon.Status]) {
	for _, a := range answers {
		for _, st := range a.items {
			if st.Cluster != "" && st.Cluster != a.cluster {
				fmt.Fprintf(w, "warning: cluster %s: the config file names it %s, its gpuctl-reconciler says %s (--cluster): does the entry read the right cluster?\n",
					a.cluster, a.cluster, st.Cluster)
			}
		}
	}
}

// printStatusFleet prints one row per cluster: CLUSTER, REVISION, RESULT, LAST SYNC, MESSAGE;
// exit 1 (printed already) when a cluster could not be read.
func printStatusFleet(w io.Writer, answers []clusterAnswer[daemon.Status], now time.Time) error {
	rows := [][]string{{"CLUSTER", "REVISION", "RESULT", "LAST SYNC", "MESSAGE"}}
	failed := false
	for _, a := range answers {
		if a.err != nil {
			failed = true
			result := "Unreadable"
			if unreachable(a.err) {
				result = "Unreachable"
			}
			rows = append(rows, []string{a.cluster, orNone(""), result, orNone(""), a.err.Error()})
			continue
		}
		for _, st := range a.items {
			last := orNone("")
			if !st.LastAttempt.IsZero() {
				last = humanize.Age(now.Sub(st.LastAttempt)) + " ago"
			}
			msg := st.Message
			if u := st.APIServer; u != nil {
				msg = "API server: " + u.String()
			}
			rows = append(rows, []string{a.cluster, orNone(humanize.Revision(st.Revision)), string(st.Result), last, orNone(msg)})
		}
	}
	if err := (&table{}).write(w, rows...); err != nil {
		return err
	}
	if failed {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}
