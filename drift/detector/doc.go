// Package detector finds drift between the cluster and the last applied revision as it
// happens, and in --drift=correct mode repairs it.
//
// It watches, besides the reconcile interval:
//   - the objects gpuctl applied (metadata-only informers, selected by the inventory's
//     ApplySet label): a spec change or deletion is evaluated at once — a fresh GET, a local
//     comparison with the desired object and, when they differ, a forced server-side dry-run
//     that tells what an apply would really change, so that server defaults, status and value
//     normalisation are never reported. Each differing field is attributed to the field
//     manager that owns it in managedFields (kubectl-edit, kubectl-client-side-apply, ...)
//     with the time it wrote; fields owned by the controllers named in IgnoreManagers (an
//     HPA's replicas, written by kube-controller-manager) are not drift;
//   - Nodes: pool labels changed or removed by hand, pool labels set by hand on a node no pool
//     names, pool nodes that do not exist, and a pool's gpu-type that differs from the one
//     gpuctl-node-labeler published;
//   - Pods, Jobs, Deployments and StatefulSets requesting GPUs (object.TypedGPUs) in the
//     namespaces gpuctl manages (and Pods on pool nodes anywhere) that are not in Git:
//     "shadow" workloads.
//
// Detection pauses while the daemon syncs (BeginSync/EndSync) so that gpuctl's own writes are
// never reported. Each new or changed item is recorded in the history, emitted as a Kubernetes
// Event on the object, counted in the gpuctl_drift_objects gauge and written to the drift
// ConfigMap (drift.Store) within a quarter of a second. Objects annotated g8s.host/drift: ignore
// are left alone.
package detector
