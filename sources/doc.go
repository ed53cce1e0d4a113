// Package sources will define the small interface through which the reconciler fetches a
// revision of the configuration into a directory (fetch, say what changed, close); the Git
// and local-directory implementations will live in sources/git and sources/local.
//
// Not implemented yet: it arrives with the issue "The reconciler daemon". Until then this
// package holds no code.
package sources
