//go:build tools

// Package tools records the etcd and kwok commands that hack/cluster-tools.sh builds.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
