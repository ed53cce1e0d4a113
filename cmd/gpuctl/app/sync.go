package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/term"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/spf13/cobra"
)

func newSyncCommand(s Streams) *cobra.Command {
	var o planOptions
	var ro readOptions // -n, --server, --token; the kubeconfig's flags are o.kube's
	var local, dryRun bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync [--local PATH]",
		Short: "Ask gpuctl-reconciler to sync now, or apply PATH once from this machine",
		Long: `Without --local: ask gpuctl-reconciler to sync now (like flux reconcile): set a request on its
status ConfigMap, wait until a sync that started after the request has ended (one sync
answers every request made before it started: callers at once all get its result), and print
the result. Exit code 0: synced; 1: the revision is invalid or the plan was refused; 2: failed
or no answer within --timeout. With the daemon's API (--server, $GPUCTL_SERVER) instead of a
kubeconfig, the request is POST /api/v1/sync, which only an admin's token may send.

With --local PATH: render PATH, plan it against the cluster and apply the plan with server-side
apply (field manager gpuctl): Namespaces, PriorityClasses and quotas first, then workloads and
node labels; then prune what gpuctl applied before and PATH no longer renders. A sync that would
prune more than --max-prune of the inventory, or apply an empty render, is refused. An object
that cannot be planned is reported and skipped; the others are applied. A PATH below the
repository root prunes only what was declared under it; credentials that may not read the
inventory apply what they may and prune nothing. Exit code 0: synced;
2: error (invalid files, refused, or an object failed).`,
		Example: `  gpuctl sync
  gpuctl sync --timeout 5m
  gpuctl sync --server https://gpuctl.example.com
  gpuctl sync --local examples/
  gpuctl sync --local examples/ --dry-run`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !local {
				if len(args) > 0 {
					return &ExitError{Code: ExitTrouble, Err: errors.New("a PATH goes with --local; without it gpuctl sync asks the daemon")}
				}
				ro.kube = o.kube
				rec, err := ro.Records(s.Err)
				if err != nil {
					return err
				}
				st, err := requestSync(cmd.Context(), s, rec, timeout)
				if err != nil {
					return err
				}
				if err := printStatus(s.Out, st, o.output, newPalette(s.Out, o.color)); err != nil {
					return err
				}
				return resultError(st)
			}
			if len(args) != 1 {
				return &ExitError{Code: ExitTrouble, Err: errors.New("--local needs a PATH")}
			}
			if cmd.Flags().Changed("server") {
				return &ExitError{Code: ExitTrouble, Err: errors.New("--local applies PATH with the kubeconfig; --server asks the daemon's API: give one")}
			}
			if err := outputFlag(o.output, "text", "json"); err != nil {
				return err
			}
			pal := newPalette(s.Out, o.color)
			fmt.Fprintf(s.Err, "planning %s ...\n", args[0])
			m, plan, err := o.plan(cmd.Context(), s, args[0])
			if err != nil {
				return err
			}
			if dryRun || plan.Refused != nil {
				return finishPlanOnly(s, o.output, plan, pal, dryRun)
			}
			printNotes(s.Err, plan, newPalette(s.Err, o.color))
			fmt.Fprintln(s.Err, plan.Summary())
			pw := newProgressWriter(s.Err, term.IsTerminal(s.Err), time.Now)
			cs, err := m.Apply(cmd.Context(), plan, pw.apply)
			pw.end()
			if cs == nil {
				return &ExitError{Code: ExitTrouble, Err: err}
			}
			if o.output == "json" {
				if jerr := writeJSON(s.Out, cs); jerr != nil {
					return jerr
				}
			} else {
				printChangeSet(s.Out, cs, pal)
			}
			if err != nil {
				return &ExitError{Code: ExitTrouble, Err: errors.New(humanize.Plural(len(cs.Failed()), "object") + " failed")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, "render PATH and apply it from this machine instead of asking the daemon")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the daemon")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "plan and print, write nothing")
	o.bindFlags(cmd.Flags())
	ro.bindRecordFlags(cmd.Flags())
	return cmd
}

// finishPlanOnly prints a plan that is not applied (dry run, or refused).
func finishPlanOnly(s Streams, output string, plan *reconciler.Plan, pal palette, dryRun bool) error {
	if output == "json" {
		if err := writeJSON(s.Out, planJSON{Summary: plan.Summary(), Plan: plan}); err != nil {
			return err
		}
	} else {
		for _, c := range plan.Changes {
			if c.Action != reconciler.ActionUnchanged {
				fmt.Fprintln(s.Out, pal.action(c.Action, changeHeader(c)))
				printChangeError(s.Out, c, pal)
			}
		}
		printSummary(s.Out, plan, pal)
	}
	if plan.Refused != nil {
		return &ExitError{Code: ExitTrouble, Err: plan.Refused}
	}
	if dryRun {
		fmt.Fprintln(s.Err, "dry run: nothing was written")
	}
	return planFailed(plan)
}
