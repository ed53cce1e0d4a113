package app

import (
	"github.com/spf13/cobra"
)

func newDiffCommand(s Streams) *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "diff PATH",
		Short: "Show what a sync of PATH would change in the cluster",
		Long: `Render PATH and compare it with the cluster: objects to create, update (with the field
diff the API server predicts), recreate (an immutable field changed), prune, and the GPUs
requested per pool before and after. Nothing is written.

An object that cannot be planned (a kind the cluster does not serve or gpuctl may not read, a
tenant object outside its namespace, a live object gpuctl did not create) is printed with its
error; the rest is planned.

A PATH below the repository root (the directory of the .gpuctl.yaml found upwards) scopes the
plan: only objects declared under PATH are pruned, only nodes of pools declared there lose
labels. With credentials that may not read the inventory (a team member's), the plan shows no
prunes, and what they may not read (nodes, other namespaces, the tenant's RoleBinding) is
skipped as "not checked"; notes above the summary say what was not checked.

Exit code 0: no changes; 1: changes; 2: error (invalid files, cluster unreachable, an object
that cannot be planned).`,
		Example: `  gpuctl diff examples/
  gpuctl diff examples/ --context prod -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if base, _ := cmd.Flags().GetString(flagBase); base != "" {
				return runReviewDiff(cmd, s, args, &o)
			}
			if err := outputFlag(o.output, "text", "json"); err != nil {
				return err
			}
			o.engine.WholePrunes = true // printPlanDiff shows what a prune takes away
			_, plan, err := o.plan(cmd.Context(), s, args[0])
			if err != nil {
				return err
			}
			if o.output == "json" {
				if err := writeJSON(s.Out, planJSON{Summary: plan.Summary(), Plan: plan}); err != nil {
					return err
				}
			} else {
				printPlanDiff(s.Out, plan, newPalette(s.Out, o.color))
			}
			if err := planFailed(plan); err != nil {
				return err
			}
			if plan.HasChanges() {
				return &ExitError{Code: ExitFailed}
			}
			return nil
		},
	}
	o.bindFlags(cmd.Flags())
	bindReviewFlags(cmd)
	return cmd
}
