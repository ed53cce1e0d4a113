package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
)

// get jobs|pools|nodes|quotas over the fleet (--clusters, --all-clusters): each cluster read at
// once through its own read model, one table with CLUSTER first (fleet.go).

// runFleet is get jobs over the fleet: each cluster's rows of the filter, in the namespace
// of -n, of every namespace with -A, else as one cluster's get jobs chooses it (the
// context's namespace, or every namespace the token sees). A job that MultiKueue dispatched
// from one cluster read to another is its manager's row only (dropWorkerCopies).
func (o *getJobsOptions) runFleet(cmd *cobra.Command, s Streams) error {
	if o.watch {
		return trouble(errors.New("--watch reads one cluster: use it without --clusters and --all-clusters"))
	}
	clusters, err := o.fleet.selected(s.Err)
	if err != nil {
		return err
	}
	answers := readFleet(cmd.Context(), clusters, func(ctx context.Context, c fleetCluster) ([]cluster.JobPod, error) {
		m, err := c.model()
		if err != nil {
			return nil, err
		}
		f := o.filter
		if f.Namespace, err = o.scope.resolve(c.kube(), m); err != nil {
			return nil, err
		}
		list, err := m.JobPods(ctx, f)
		return list.Items, err
	})
	dropWorkerCopies(answers, func(r cluster.JobPod) (string, *cluster.QueueState) { return r.JobID, r.Queue })
	return printFleet(s.Out, s.Err, o.output, "jobs", answers, jobPodColumns(time.Now()))
}

// getFleet is get pools or nodes over the fleet: read lists each cluster's items, printed
// with the columns c and CLUSTER first.
func getFleet[T any](cmd *cobra.Command, o *getListOptions, what string, c listColumns[T], read func(context.Context, cluster.Model) ([]T, error)) error {
	if err := outputFlag(o.output, "", outputWide, outputJSON, outputYAML, outputName); err != nil {
		return err
	}
	clusters, err := o.fleet.selected(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	answers := readModels(cmd.Context(), clusters, read)
	return printFleet(cmd.OutOrStdout(), cmd.ErrOrStderr(), o.output, what, answers, c)
}

// getQuotasFleet is get quotas [TEAM] over the fleet. A team that a cluster does not know is
// no row of it; a team that no cluster knows is the read model's not-found error (exit 1).
func getQuotasFleet(cmd *cobra.Command, o *getListOptions, args []string) error {
	if err := outputFlag(o.output, "", outputWide, outputJSON, outputYAML, outputName); err != nil {
		return err
	}
	clusters, err := o.fleet.selected(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	answers := readModels(cmd.Context(), clusters, func(ctx context.Context, m cluster.Model) ([]cluster.Quota, error) {
		if len(args) == 0 {
			list, err := m.Quotas(ctx)
			return list.Items, err
		}
		q, err := m.Quota(ctx, args[0])
		if err != nil {
			return nil, err
		}
		q.Jobs = nil // the use by job is describe quota's
		return []cluster.Quota{q}, nil
	})
	var notFound error
	answered := false // a cluster that knows the team, or one that could not be read
	for i, a := range answers {
		if errors.As(a.err, new(*cluster.NotFoundError)) {
			notFound, answers[i].err = a.err, nil
		} else {
			answered = true
		}
	}
	if notFound != nil && !answered {
		return readError(fmt.Errorf("in no cluster: %w", notFound))
	}
	w, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.output == outputJSON || o.output == outputYAML {
		return printFleet(w, errw, o.output, "quotas", answers, listColumns[cluster.Quota]{})
	}
	rows := make([]clusterAnswer[quotaRow], len(answers))
	queues := false
	for i, a := range answers {
		var q bool
		rows[i].cluster, rows[i].err = a.cluster, a.err
		rows[i].items, q = quotaRows(a.items, o.output)
		queues = queues || q
	}
	return printFleet(w, errw, o.output, "quotas", rows, quotaColumns(queues))
}
