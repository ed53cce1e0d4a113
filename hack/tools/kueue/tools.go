//go:build tools

// Package tools records the Kueue command that hack/cluster-tools.sh builds: a copy of its
// cmd/kueue/main.go, taken from the module at build time and patched (see the script), so that
// go.mod and go.sum list what that command needs.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
