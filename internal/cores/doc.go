// Package cores runs independent pieces of CPU work on every core: rendering files, deciding
// listed objects, hashing and compressing desired objects.
package cores
