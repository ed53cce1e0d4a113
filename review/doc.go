// Package review compares what two Git revisions of a gpuctl repository render to, without a
// cluster: the objects added, changed and removed (ObjectDiff, with a field-level diff from
// object.DiffFields), the GPUs requested (object.GPUs) per team, pool and GPU type before and
// after — with queueing kueue also per team queue and pool against the queue's quota and what
// it can borrow (QueueLine) —, and the violations of the repository's policy
// (gpuctl-policy.yaml), quotas and pools.
// It is what `gpuctl diff --base REV` prints, and what a pull request's CI posts as a comment.
//
// Both sides are read with go-git (no checkout) into memory and rendered with render.MemFS,
// both with the base revision's admin files (.gpuctl.yaml and gpuctl-policy.yaml): a change
// that adds, removes or modifies one is a policy violation that an admin must review, and it
// never applies to its own review:
//
//	rep, err := review.Run(review.Options{Dir: ".", Path: "teams/", Base: "origin/main"})
//	if err != nil {
//		return err
//	}
//	_ = review.WriteMarkdown(os.Stdout, rep, review.MarkdownOptions{})
//
// An empty Head is the working tree (tracked and untracked files, .gitignore respected).
// See docs/review.md.
package review
