// Package sources defines how the reconciler gets the configuration it applies: a Source
// fetches the newest revision of a tree of files into a directory, says when there may be a
// new one, and is closed at the end. Implementations: sources/local (a directory watched with
// fsnotify) and sources/git (a Git repository fetched with go-git, polled and woken by
// webhooks).
//
//	src, _ := local.New(local.Options{Root: "examples"})
//	defer src.Close()
//	for {
//		rev, err := src.Fetch(ctx) // on error, rev is the last good revision
//		... render rev.Dir, plan, apply ...
//		select {
//		case <-src.Changes():
//		case <-time.After(interval):
//		}
//	}
package sources
