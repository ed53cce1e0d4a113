// Package multinode holds the tests of multi-node training against the local cluster
// (testcluster): what Kubernetes' Indexed Job does when one rank of a running job is lost
// (measured, docs/format.md §2.2), and that a multi-node job rendered by gpuctl restarts all its
// ranks together when one is lost and then completes. The package has only tests.
package multinode
