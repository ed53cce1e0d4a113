//go:build tools

// Package tools records the commands that hack/cluster-tools.sh builds from this module: Kueue,
// from a copy of its cmd/kueue/main.go taken from the module at build time and patched (see the
// script), and the JobSet controller, as its module ships it; so that go.mod and go.sum list
// what those commands need.
package tools

import (
	_ "sigs.k8s.io/jobset"
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
