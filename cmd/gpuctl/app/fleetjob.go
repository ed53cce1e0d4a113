package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gpuctl/gpuctl/cluster"
)

// jobModel is the read model of the one cluster of the fleet (--clusters, --all-clusters)
// that has the job id (<namespace>.<name>, or a bare name): describe job and logs read the job
// there. Each cluster is asked at once (GET of the job). A job in several clusters, or a bare
// name that several namespaces of a cluster have, exits 2 listing them; a job in none exits 1
// (the read model's not-found error). A cluster that cannot be read is a line on warn; when
// no other cluster has the job, the exit code is 1 and the message says which clusters were
// not searched. A job that MultiKueue dispatched from one cluster to another is its manager's
// (dropWorkerCopies): describe and logs read its pods in the worker from there.
func (o *fleetOptions) jobModel(ctx context.Context, warn io.Writer, id string) (cluster.Model, error) {
	clusters, err := o.selected(warn)
	if err != nil {
		return nil, err
	}
	type found struct {
		model cluster.Model
		id    string
		queue *cluster.QueueState
	}
	answers := readFleet(ctx, clusters, func(ctx context.Context, c fleetCluster) ([]found, error) {
		m, err := c.model()
		if err != nil {
			return nil, err
		}
		j, err := m.Job(ctx, id)
		if err != nil {
			return nil, err
		}
		return []found{{m, j.JobID, j.Queue}}, nil
	})
	dropWorkerCopies(answers, func(f found) (string, *cluster.QueueState) { return f.id, f.queue })
	var notFound error
	var in, unread []string
	var m cluster.Model
	for _, a := range answers {
		var amb *cluster.AmbiguousError
		switch {
		case a.err == nil && len(a.items) == 0: // MultiKueue's copy of a job of a manager read too
		case errors.As(a.err, new(*cluster.NotFoundError)):
			notFound = a.err
		case errors.As(a.err, &amb):
			for _, id := range amb.IDs {
				in = append(in, a.cluster+" "+id)
			}
		case a.err != nil:
			fmt.Fprintln(warn, clusterProblem(a.cluster, a.err))
			unread = append(unread, a.cluster)
		default:
			m = a.items[0].model
			in = append(in, a.cluster+" "+a.items[0].id)
		}
	}
	switch {
	case len(in) > 1:
		return nil, trouble(fmt.Errorf("job %q is in more than one place: %s: name one cluster with --clusters (and the namespace with -n or <namespace>.<name>)",
			id, strings.Join(in, ", ")))
	case len(in) == 1:
		return m, nil
	case len(unread) > 0:
		return nil, &ExitError{Code: ExitFailed, Err: fmt.Errorf("job %q is in none of the clusters that answered; not searched: %s", id, strings.Join(unread, ", "))}
	case notFound != nil:
		return nil, readError(notFound)
	}
	return nil, trouble(errors.New("no cluster to search"))
}
