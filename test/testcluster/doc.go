// Package testcluster runs a real, local Kubernetes control plane for integration tests, the demo
// and benchmarks: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (and
// Kueue when asked), all as child processes listening on free 127.0.0.1 ports. Nodes are fake
// GPU nodes managed by kwok, so pods are scheduled by the real scheduler against real quotas,
// become Running, and pods owned by a Job become Succeeded about a second later, so Jobs
// complete.
//
// The binaries are built once from the Go module proxy by hack/cluster-tools.sh into
// ~/.cache/gpuctl/cluster (see [Binaries]); set GPUCTL_CLUSTER_BIN to a directory that already
// holds them to skip the build. Once built, a cluster is up in a few seconds.
//
// A test package starts one cluster for all of its tests:
//
//	func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{})) }
//
//	func TestSomething(t *testing.T) {
//		c := testcluster.Current()
//		client := kubernetes.NewForConfigOrDie(c.RESTConfig())
//		// ... create a namespace of your own, then objects in it ...
//		_ = client
//	}
//
// With [Options].Kueue the cluster also runs the real Kueue controller (v0.15.2, built by the
// same script, about 10 minutes the first time), out of cluster like the other components:
// Start installs its CRDs (with the v1beta1↔v1beta2 conversion webhook) and its webhook
// configurations, which call it at https://127.0.0.1:PORT with a certificate of the cluster CA,
// starts it with a Configuration in <Dir>/kueue (log in <Dir>/kueue.log) and returns once its
// webhooks answer, a few seconds later. Kueue then queues the Jobs, pods, Deployments and
// StatefulSets labelled kueue.x-k8s.io/queue-name, and those of a namespace that has a
// LocalQueue named default; a test creates the ResourceFlavors, ClusterQueues and LocalQueues:
//
//	func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{Kueue: true})) }
//
// With [Options].JobSet the cluster also runs the JobSet controller (kubernetes-sigs/jobset,
// built with Kueue from the module Kueue requires), the same way: its CRD, its webhook
// configurations calling it on 127.0.0.1, its log in <Dir>/jobset.log; it starts before Kueue,
// so that Kueue admits JobSets too.
//
// Pods have logs that go through the API server's real path: kube-apiserver asks the node's
// kubelet endpoint (kwok's server, at NodeIP, TLS from the cluster CA), which reads the file that
// a kwok Logs object names for the container. [Cluster.WritePodLog] appends lines to that file,
// so GET pods/{name}/log (kubectl logs, -f included) returns them:
//
//	err := c.WritePodLog(ctx, testcluster.LogTarget{Namespace: ns, Pod: pod, Container: "main"}, "epoch 1 loss 0.9")
//
// If the cluster cannot start, Main prints why and the package fails; it never skips. Outside
// tests, use [Start] and [Cluster.Stop], or `go run ./hack/cluster up [--kueue]` for a
// long-running cluster.
package testcluster
