package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/term"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// waitApplied waits until gpuctl-reconciler has applied the pushed commit sha (or a later one
// that holds it), reading its status as gpuctl status does, with a progress line; then it
// prints the rows of the edit's jobs as gpuctl get jobs does.
func (o *writeOptions) waitApplied(ctx context.Context, s Streams, tree *gitTree, sha string, res *edit.Result) error {
	store, err := storeFor(&o.kube, o.system)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	read := func(ctx context.Context) (daemon.Status, error) {
		st, _, err := store.Read(ctx)
		return st, err
	}
	holds := func(rev string) bool { return tree.holds(ctx, rev, sha) }
	if _, err := waitForRevision(wctx, s.Err, read, holds, sha, time.Second); err != nil {
		return err
	}
	client, dyn, err := kubeClients(&o.kube)
	if err != nil {
		return err
	}
	m := &cluster.Reader{Client: client, Dynamic: dyn, Namespace: o.system}
	return printJobsOf(ctx, s, m, res)
}

// waitForRevision reads the daemon's status every period until a revision that holds sha is
// applied (holds tells whether a revision is sha or comes after it), or the attempt at such a
// revision failed (an invalid revision, a refused plan, a failed apply), or ctx ends. It
// prints a progress line on w: rewritten in place on a terminal, else every 5 s.
func waitForRevision(ctx context.Context, w io.Writer, read func(context.Context) (daemon.Status, error),
	holds func(string) bool, sha string, period time.Duration) (daemon.Status, error) {
	start := time.Now()
	tty := term.IsTerminal(w)
	var lastNote time.Duration
	for {
		st, err := read(ctx)
		switch {
		case err == nil && st.AppliedRevision != "" && holds(st.AppliedRevision):
			if tty {
				fmt.Fprint(w, "\r\x1b[K")
			}
			fmt.Fprintf(w, "applied %s (%s)\n", humanize.Revision(sha), humanize.Duration(time.Since(start)))
			return st, nil
		case err == nil && st.Revision != "" && holds(st.Revision) && failedResult(st.Result):
			if tty {
				fmt.Fprintln(w)
			}
			return st, fmt.Errorf("gpuctl-reconciler did not apply %s: %s: %s (see gpuctl status)", humanize.Revision(sha), st.Result, st.Message)
		}
		waited := time.Since(start)
		note := fmt.Sprintf("waiting for gpuctl-reconciler to apply %s: %s", humanize.Revision(sha), progressOf(st, err))
		if tty {
			fmt.Fprintf(w, "\r\x1b[K%s (%s)", note, humanize.Duration(waited))
		} else if waited-lastNote >= 5*time.Second || lastNote == 0 {
			lastNote = max(waited, time.Nanosecond)
			fmt.Fprintf(w, "%s (%s)\n", note, humanize.Duration(waited))
		}
		select {
		case <-ctx.Done():
			if tty {
				fmt.Fprintln(w)
			}
			return st, fmt.Errorf("%s is not applied yet (%s): see gpuctl status", humanize.Revision(sha), context.Cause(ctx))
		case <-time.After(period):
		}
	}
}

// failedResult tells a sync that will not apply its revision without a new commit.
func failedResult(r daemon.Result) bool {
	return r == daemon.ResultInvalid || r == daemon.ResultRefused || r == daemon.ResultFailed
}

// progressOf says where the daemon is.
func progressOf(st daemon.Status, err error) string {
	switch {
	case err != nil:
		return "cannot read its status: " + err.Error()
	case st.AppliedRevision == "":
		return "nothing applied yet"
	}
	return "it last applied " + humanize.Revision(st.AppliedRevision)
}

// holds reports whether revision rev is sha or comes after it. A revision this clone does not
// have is fetched first.
func (g *gitTree) holds(ctx context.Context, rev, sha string) bool {
	if rev == sha {
		return true
	}
	if _, err := g.git(ctx, "cat-file", "-e", rev+"^{commit}"); err != nil {
		if remote, _, err := g.upstream(ctx); err == nil {
			_, _ = g.git(ctx, "fetch", "-q", remote)
		}
	}
	_, err := g.git(ctx, "merge-base", "--is-ancestor", sha, rev)
	return err == nil
}

// printJobsOf prints the rows of gpuctl get jobs of the edit's workloads; a deleted one that
// is gone says so.
func printJobsOf(ctx context.Context, s Streams, m cluster.Model, res *edit.Result) error {
	var rows cluster.JobPodList
	for _, w := range res.Workloads {
		list, err := m.JobPods(ctx, cluster.JobPodFilter{Namespace: w.Namespace, Kind: w.Kind, Selector: keys.App + "=" + w.Name})
		if err != nil {
			return readError(err)
		}
		if len(list.Items) == 0 {
			if res.Verb == "delete" {
				fmt.Fprintf(s.Out, "%s: gone from the cluster\n", w.ID())
			} else {
				fmt.Fprintf(s.Err, "%s: no job in the cluster yet\n", w.ID())
			}
			continue
		}
		rows.Items = append(rows.Items, list.Items...)
	}
	if len(rows.Items) == 0 {
		return nil
	}
	return printJobPods(s.Out, rows, "", time.Now())
}
