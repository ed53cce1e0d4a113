// Package keys holds every label key, annotation key, object name and field manager that gpuctl
// writes, so that no other package spells them as string literals.
//
// All label and annotation keys that gpuctl owns start with the g8s.host/ prefix.
package keys
