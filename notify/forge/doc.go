// Package forge reports the result of a sync on the synced commit as a commit status on
// the Git forge: GitHub, GitLab, Gitea or Forgejo, Bitbucket Cloud. The repository is
// taken from the Git URL that the daemon syncs; the token is read from a file.
//
// Report never blocks: it queues the status, and Run, the one sender loop the caller
// starts, posts it, retrying a forge that is down, slow or rate-limited with backoff. A
// newer status of the same commit replaces one still queued, so a commit ends with the
// last word; the same status twice in a row for a commit is posted once.
//
//	r, err := forge.New(forge.Options{TokenFile: "/etc/gpuctl/forge/token",
//		Context: "gpuctl/prod"}, "https://github.com/acme/gpu-jobs.git")
//	if err != nil {
//		return err
//	}
//	go r.Run(ctx)
//	r.Report(sha, forge.StatePending, "syncing")
//	r.Report(sha, forge.StateSuccess, "applied: 3 created, 1 updated")
//
// The package imports nothing of gpuctl's: the daemon maps its sync results to States.
package forge
