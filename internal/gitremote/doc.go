// Package gitremote reads a Git remote's URL — https, ssh:// or scp-like
// (git@host:owner/repo.git) — for what it says about the repository's forge: the host, the
// web address, and the repository's path. The write verbs' pull request pages and the commit
// statuses read remotes through it, and print them only without their credentials (Shown).
package gitremote
