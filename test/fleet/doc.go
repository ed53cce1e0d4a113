// Package fleet tests one repository serving two clusters (docs/fleet.md, issue 37) against two
// real local control planes (testcluster), each started in its own directory on its own ports
// with the same node names: two gpuctl-reconcilers run in this process, each with --cluster
// and its own cluster, and apply the shared files and their own clusters/NAME/ only; the CLI's
// fleet view (`gpuctl get jobs --all-clusters`, `gpuctl status --all-clusters`) reads both
// through kubeconfig contexts and, with one cluster stopped, still prints the other and names
// the stopped one unreachable (exit 1). The package has only tests.
package fleet
