package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/gpuctl/gpuctl/review"
	"github.com/spf13/cobra"
)

// reviewFlags are the flags that turn `gpuctl diff` into a comparison of two Git revisions.
const (
	flagBase   = "base"
	flagHead   = "head"
	flagFailOn = "fail-on"
)

// bindReviewFlags adds --base, --head and --fail-on to the diff command: with --base, diff
// compares two revisions of the Git checkout instead of PATH and the cluster.
func bindReviewFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.String(flagBase, "", "compare with this Git revision instead of the cluster (branch, tag, commit, origin/main, HEAD~1); no cluster is contacted")
	fs.String(flagHead, "", "with --base: the head revision (default: the working tree, untracked files included, .gitignore respected)")
	fs.String(flagFailOn, "changes", "with --base: exit 1 on \"changes\" (any change or new error violation, as git diff --exit-code) or only on \"violations\" (new error violations)")
	if f := fs.Lookup("output"); f != nil {
		f.Usage = "output format: text or json; with --base also markdown (a pull-request comment)"
	}
	cmd.Use = "diff PATH | diff --base REV [--head REV] [PATH]"
	cmd.Long += `

With --base, diff needs no cluster: it renders two Git revisions of the repository holding PATH
(default: the current directory), both with the base revision's .gpuctl.yaml and
gpuctl-policy.yaml, and compares them: objects added, changed and removed with a field-level
diff, the GPUs requested per team, pool and GPU type before and after, and the violations of
gpuctl-policy.yaml, the quotas and the pools; a change to either admin file is a violation that
an admin must review. -o markdown writes a pull-request
comment. Exit code 0: no changes and no new error violations; 1: changes or new error
violations (--fail-on violations: only violations); 2: error. See docs/review.md.`
	cmd.Example += `
  gpuctl diff --base origin/main
  gpuctl diff --base origin/main --head HEAD teams/ -o markdown > comment.md`
	args := cmd.Args
	cmd.Args = func(cmd *cobra.Command, a []string) error {
		if base, _ := cmd.Flags().GetString(flagBase); base != "" {
			return cobra.MaximumNArgs(1)(cmd, a)
		}
		if head, _ := cmd.Flags().GetString(flagHead); head != "" {
			return fmt.Errorf("--head needs --base")
		}
		return args(cmd, a)
	}
}

// runReviewDiff is `gpuctl diff --base REV`: two revisions compared, no cluster.
func runReviewDiff(cmd *cobra.Command, s Streams, args []string, o *planOptions) error {
	flags := cmd.Flags()
	base, _ := flags.GetString(flagBase)
	head, _ := flags.GetString(flagHead)
	failOn, _ := flags.GetString(flagFailOn)
	if err := outputFlag(o.output, "text", "json", "markdown"); err != nil {
		return err
	}
	if failOn != "changes" && failOn != "violations" {
		return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("--fail-on %q: want changes or violations", failOn)}
	}
	if o.render.Given() {
		return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("--config and the render flags (--namespace-map, --host-path-prefixes, --writable-host-path-prefixes, --queueing) cannot be combined with --base: both revisions are rendered with the base revision's .gpuctl.yaml")}
	}
	target := "."
	if len(args) == 1 {
		target = args[0]
	}
	rep, err := reviewReport(target, base, head, o.render.Cluster)
	if err != nil {
		return &ExitError{Code: ExitTrouble, Err: err}
	}
	if err := writeReview(s, rep, o, reviewCommand(base, head, args)); err != nil {
		return &ExitError{Code: ExitTrouble, Err: err}
	}
	if len(rep.Failing()) > 0 || failOn == "changes" && rep.HasChanges() {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}

// reviewReport opens the repository holding target and compares base with head there.
func reviewReport(target, base, head, cluster string) (*review.Report, error) {
	dir := target
	if st, err := os.Stat(target); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s: --base compares directories; give the directory", target)
	}
	repo, err := review.Open(dir)
	if err != nil {
		return nil, err
	}
	rel, err := repo.RelPath(target)
	if err != nil {
		return nil, err
	}
	return review.Run(review.Options{Dir: dir, Path: rel, Base: base, Head: head, Cluster: cluster})
}

func writeReview(s Streams, rep *review.Report, o *planOptions, command string) error {
	switch o.output {
	case "json":
		return review.WriteJSON(s.Out, rep)
	case "markdown":
		return review.WriteMarkdown(s.Out, rep, review.MarkdownOptions{Command: command})
	}
	return review.WriteText(s.Out, rep, review.TextOptions{Color: newPalette(s.Out, o.color).On})
}

// reviewCommand is the command line that reproduces a review, for the markdown's notes.
func reviewCommand(base, head string, args []string) string {
	parts := []string{"gpuctl", "diff", "--base", base}
	if head != "" {
		parts = append(parts, "--head", head)
	}
	return strings.Join(append(parts, args...), " ")
}
