// Package local is a sources.Source over a directory tree on this machine: the source of
// `gpuctl-reconciler --source=dir:/path` and of `make demo`. The tree is watched with fsnotify
// and hashed on Fetch; the revision's Dir is the directory itself.
//
//	src, err := local.New(local.Options{Root: "examples", Log: logger})
//	if err != nil {
//		return err // names the root: missing, or not a directory
//	}
//	defer src.Close()
//	for {
//		rev, err := src.Fetch(ctx) // rev.ID: content hash; rev.Changed: ["team-a/pool.yaml"]
//		... render rev.Dir, plan, apply ...
//		select {
//		case <-src.Changes(): // a file changed (debounced), or src.Trigger()
//		case <-ctx.Done():
//			return nil
//		}
//	}
//
// # Revisions
//
// A revision's ID is the first 20 bytes, in hex, of a sha256 over the sorted list of
// (slash-separated relative path, executable bit, sha256 of the content) of every regular file:
// a pure function of the tree's content, equal across machines and instances, blind to mtimes
// and to directories without files. Changed lists the files added, removed or modified
// (content or executable bit) since the previous successful Fetch; it is nil on the first.
//
// Each file is read once: its content hash is cached by path, size and mtime, so a Fetch after
// one edit reads one file. Nor is the tree walked for an edit: between two walks of the whole
// tree (the first Fetch, then at least every FullScanEvery, one minute), a Fetch stats and
// hashes only the paths that file events named since the last one — a file hashed again, a
// directory walked, a path that is gone dropped with everything below it — and every symlink
// (its target may change elsewhere). Before it takes those paths, a Fetch waits until the
// watcher has handled every event of a write made before it: it creates a file in a private
// temporary directory on the same inotify instance, whose queue keeps the order of events,
// and waits for that file's event. A Fetch walks the whole tree instead when it cannot know:
// no temporary directory to write to, events lost (an overflow), a directory that could not
// be watched, the root itself changed. A change that makes no event here (a network
// filesystem written from another machine, a hard link written from outside Root) is found
// by the next walk. Files modified less than two seconds before they were hashed are
// read again by the next Fetch, because a second write within the filesystem's timestamp
// granularity may leave size and mtime unchanged (Git's "racy clean" problem).
//
// # What is left out
//
// Dot-files and dot-directories (.git, .file.yaml.swp) and editors' backup and temporary files
// (file.yaml~, #file.yaml#, file.yaml___jb_tmp___, file.yaml___jb_old___) are neither watched
// nor hashed; so are devices, pipes and sockets. The one dot-file that is both is
// .gpuctl.yaml, the configuration the render reads.
//
// A symlink to a file inside Root is hashed as its target's content. Symlinks that leave Root
// (checked with filepath.EvalSymlinks), point to a hidden path or dangle are skipped, with one
// warning per path. Symlinks to directories are not followed, neither by the walk nor by the
// watcher: a symlinked directory inside Root is ignored (its files are hashed at their real
// paths). Root itself may be a symlink; it is resolved once, by New.
//
// # Watching
//
// Every directory under Root is watched, including those created later: a new directory is
// added and walked when its Create event arrives, and one removed or renamed and created again
// is added again. This also covers editors that save by writing a temporary file and renaming
// it over the original (vim, VS Code, JetBrains). If Root itself is removed or renamed, the
// watcher looks for it every 250 ms and watches it again when it is back. After an inotify
// queue overflow the whole tree is added again and a change is signalled.
//
// Events are debounced: Changes receives one value after Debounce (default 100 ms) without
// events, and during a stream of events that never pauses, no later than MaxWait (1 s) after
// its first event. Every event on a non-hidden path counts, Chmod included (it may change the
// executable bit), so a signal may come without a new revision; Fetch is cheap then. Activity
// receives a value at the first event of a burst (sources.Activity): the daemon renders the
// tree while the events settle, and uses that render only for the revision it then fetches.
package local
