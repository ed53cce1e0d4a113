// Package git is a sources.Source over a Git repository, fetched with go-git (no git
// binary needed). It follows a branch, a tag or the remote's HEAD, or pins a commit; polls
// the remote ref cheaply (an ls-remote) to signal Changes; and serves webhooks from GitHub,
// GitLab or any sender that signs with HMAC-SHA256.
//
// Each Fetch checks a new commit out whole into a new directory, which then takes the place
// of the last one at once, so force-pushes converge and a revision's directory always holds
// one whole tree; it reports which files changed. Each exchange with the remote is bounded by
// Options.Timeout. When a fetch fails (the remote, the checkout), the last good revision is
// returned with the error, its files as they were.
//
// Commit (sources.Committer) is how the daemon's API writes: it fetches the followed branch,
// runs an edit over its tree in memory, writes the commit into the clone's object store and
// pushes it as a compare-and-swap on the branch (or to a new branch, with PullRequestURL for
// the page that opens its pull request); when the branch moved, it makes the edit again on the
// new commit, at most sources.MaxPushRetries times. It never touches the checked-out tree,
// so a revision being rendered is never half-written.
//
// Credentials come from files (AuthOptions), read at each fetch so that rotated secrets are
// picked up; they never appear in URL(), logs or errors. SSH checks the server's host key
// against a known_hosts file.
//
//	opts := git.DefaultOptions("https://github.com/org/config.git", "main")
//	opts.Path = "clusters/prod"
//	opts.Auth.TokenFile = "/var/run/secrets/git/token"
//	src, err := git.New(opts)
//	if err != nil {
//		return err
//	}
//	defer src.Close()
//	http.Handle("/hooks/git", git.NewWebhookHandler(git.WebhookGitHub,
//		"/var/run/secrets/git/webhook", src, log))
//	for {
//		rev, err := src.Fetch(ctx) // on error, rev is the last good revision
//		... render rev.Dir (clusters/prod of commit rev.ID), plan, apply ...
//		select {
//		case <-src.Changes(): // a poll saw a new commit, or a webhook arrived
//		case <-ctx.Done():
//			return nil
//		}
//	}
package git
