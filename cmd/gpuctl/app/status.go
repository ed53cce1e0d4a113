package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"
)

// storeFor builds the status store from the kubeconfig flags.
func storeFor(ko *kube.Options, namespace string) (*daemon.Store, error) {
	kube, err := kubeClient(ko)
	if err != nil {
		return nil, err
	}
	return daemon.NewStore(kube, namespace), nil
}

func newStatusCommand(s Streams) *cobra.Command {
	var ro readOptions
	var fleet fleetOptions
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what gpuctl-reconciler last did: revision, result, counts, errors",
		Long: `Read the status that gpuctl-reconciler records in its namespace (ConfigMap gpuctl-status):
the source and revision, the result of the last sync, when it ran, the plan summary and the
errors. Needs only a kubeconfig that can read ConfigMaps in that namespace, or the daemon's
API (--server, $GPUCTL_SERVER) and a token: a team's token sees what concerns its namespaces.
--clusters a,b or --all-clusters read the clusters of the config file's clusters: list, one row
each (CLUSTER, REVISION, RESULT, LAST SYNC, MESSAGE); a cluster that cannot be read is a row
that says so, and the exit code is 1.`,
		Example: `  gpuctl status
  gpuctl status -o json
  gpuctl status --server https://gpuctl.example.com
  gpuctl status --all-clusters`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output, "text", "json", "yaml"); err != nil {
				return err
			}
			if fleet.on() {
				return statusFleet(cmd, s, &fleet, output)
			}
			rec, err := ro.Records(s.Err)
			if err != nil {
				return err
			}
			st, err := rec.Status(cmd.Context())
			if err != nil {
				return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("read status: %w", err)}
			}
			return printStatus(s.Out, st, output, newPalette(s.Out, "auto"))
		},
	}
	ro.BindRecordFlags(cmd.Flags())
	fleet.BindFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

func printStatus(w io.Writer, st daemon.Status, output string, p palette) error {
	switch output {
	case "json":
		return writeJSON(w, st)
	case "yaml":
		b, err := sigsyaml.Marshal(st)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("Cluster:", st.Cluster)
	row("Source:", st.Source)
	rev := humanize.Revision(st.Revision)
	if st.RevisionMessage != "" {
		rev += "  " + st.RevisionMessage
	}
	row("Revision:", rev)
	if st.AppliedRevision != st.Revision {
		row("Applied:", humanize.Revision(st.AppliedRevision))
	}
	result := string(st.Result)
	if st.Result == daemon.ResultSucceeded {
		result = p.OK(result)
	} else if st.Result != daemon.ResultPending {
		result = p.Error(result)
	}
	if st.Message != "" {
		result += ": " + st.Message
	}
	row("Result:", result)
	if u := st.APIServer; u != nil { // from the daemon's memory (--server): the ConfigMap cannot be written meanwhile
		row("API server:", p.Error(u.String())+"; nothing is synced or recorded until it answers, then a sync starts at once")
	}
	if since := st.FetchingSince; !since.IsZero() {
		row("Fetching:", "for "+humanize.Age(time.Since(since))+", since "+since.UTC().Format(time.RFC3339)+": the source has not answered yet")
	}
	if a := st.Applying; a != nil { // in progress, or interrupted: the next sync applies in full
		row("Applying:", a.String()+": not ended; if the daemon stopped meanwhile, its next sync applies in full")
	}
	if !st.LastAttempt.IsZero() {
		took := humanize.Duration(st.Duration)
		if st.Steps != nil {
			took += " (" + st.Steps.String() + ")"
		}
		row("Last sync:", fmt.Sprintf("%s (%s ago), took %s", st.LastAttempt.UTC().Format(time.RFC3339),
			humanize.Age(time.Since(st.LastAttempt)), took))
	}
	if !st.LastSuccess.IsZero() {
		row("Last success:", st.LastSuccess.UTC().Format(time.RFC3339))
	}
	row("Summary:", st.Summary)
	row("Leader:", st.Leader)
	_ = tw.Flush()
	if len(st.TakenBack) > 0 {
		fmt.Fprintln(w, "Taken back from other managers (Git wins on what a revision changes):")
		for _, e := range st.TakenBack {
			fmt.Fprintln(w, "  "+e)
		}
	}
	if len(st.Errors) > 0 {
		fmt.Fprintln(w, "Errors:")
		for _, e := range st.Errors {
			fmt.Fprintln(w, "  "+e)
		}
	}
	if len(st.Held) > 0 {
		fmt.Fprintln(w, p.Error("Held")+" (their files have errors; each namespace keeps the revision it is held at, the others apply):")
		for _, h := range st.Held {
			rest := h.Errors
			if len(rest) > 0 {
				h.Errors, rest = rest[:1], rest[1:]
			}
			fmt.Fprintln(w, "  "+h.String())
			for _, e := range rest {
				fmt.Fprintln(w, "    "+e)
			}
		}
	}
	return nil
}

// requestSync asks the daemon for a sync and waits until a sync that started after the
// request has ended (daemon.Status.Answers): concurrent callers each get such a sync's result.
func requestSync(ctx context.Context, s Streams, rec records, timeout time.Duration) (daemon.Status, error) {
	req, err := rec.RequestSync(ctx)
	if err != nil {
		return daemon.Status{}, &ExitError{Code: ExitTrouble, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastNote := time.Duration(0)
	for {
		st, err := rec.Status(ctx)
		if err == nil && st.Answers(req) {
			return st, nil
		}
		if waited := time.Since(start); waited-lastNote >= 5*time.Second {
			lastNote = waited
			fmt.Fprintf(s.Err, "waiting for gpuctl-reconciler to run a sync that started after the request (%s)\n", humanize.Duration(waited))
		}
		select {
		case <-ctx.Done():
			return daemon.Status{}, &ExitError{Code: ExitTrouble, Err: fmt.Errorf("no answer from gpuctl-reconciler within %s (request %s): no sync that started after the request has ended; it may be busy with a longer sync (--timeout waits longer) or not running: see gpuctl status", timeout, req.ID)}
		case <-tick.C:
		}
	}
}

// resultError maps a sync result to the exit code of gpuctl sync.
func resultError(st daemon.Status) error {
	switch st.Result {
	case daemon.ResultSucceeded:
		return nil
	case daemon.ResultInvalid, daemon.ResultRefused:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("sync %s: %s", strings.ToLower(string(st.Result)), st.Message)}
	}
	return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("sync %s: %s", strings.ToLower(string(st.Result)), st.Message)}
}
