package app

import (
	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/edit"
)

func newPauseCommand(s Streams) *cobra.Command {
	return newJobVerbCommand(s, "pause", jobWriteVerb{
		short: "Pause a job in the repository, and commit it",
		long: `Pause JOB by its file and commit it with git: a training job gets job.suspend: true (its Job is
suspended: its pods stop, and none start); an inference, notebook or compute service gets
service.replicas: 0, its replicas kept in service.pausedReplicas for gpuctl resume. With
queueing: kueue, a paused training job also gives its place in the queue and its quota back
(docs/format.md). A job already paused is an error.

` + jobArgHelp,
		example: `  gpuctl pause job qwen2-7b-sft
  gpuctl pause job alice.llama3-8b --push --wait`,
		edit: func(repo *edit.Repo, ref edit.JobRef, _ []string) (*edit.Result, error) { return repo.Pause(ref) },
	})
}

func newResumeCommand(s Streams) *cobra.Command {
	return newJobVerbCommand(s, "resume", jobWriteVerb{
		short: "Resume a paused job in the repository, and commit it",
		long: `Resume JOB, which gpuctl pause paused, and commit it with git: a training job's job.suspend is
removed; a service gets back the replicas of service.pausedReplicas. A job that is not paused
is an error.

` + jobArgHelp,
		example: `  gpuctl resume job qwen2-7b-sft
  gpuctl resume job alice.llama3-8b --push`,
		edit: func(repo *edit.Repo, ref edit.JobRef, _ []string) (*edit.Result, error) { return repo.Resume(ref) },
	})
}
