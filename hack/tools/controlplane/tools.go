//go:build tools

// Package tools records kubectl, which hack/cluster-tools.sh builds from this module for
// `make bench` only (the peer gpuctl is compared with).
package main

import (
	_ "k8s.io/kubernetes/cmd/kubectl"
)
