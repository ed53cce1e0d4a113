package testcluster

import (
	_ "embed"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Node annotation that marks a node as fake and managed by kwok.
const (
	// KwokAnnotation is the annotation key kwok selects the nodes it manages by.
	KwokAnnotation = "kwok.x-k8s.io/node"
	// KwokAnnotationValue is the value of KwokAnnotation on every fake node.
	KwokAnnotationValue = "fake"
)

// The label and annotations that make kwok fail a pod (the Stage pod-container-running-failed
// of kwok.yaml).
const (
	// FailLabel set to "true" on a pod makes it fail a second after it runs.
	FailLabel = "pod-container-running-failed.stage.kwok.x-k8s.io"
	// FailReasonAnnotation is the reason of its containers' termination (default Error).
	FailReasonAnnotation = FailLabel + "/reason"
	// FailExitCodeAnnotation is their exit code (default 1).
	FailExitCodeAnnotation = FailLabel + "/exit-code"
)

// FailingPod marks a pod template so that kwok fails its pods with the reason and exit code,
// e.g. OOMKilled and 137.
func FailingPod(t *corev1.PodTemplateSpec, reason string, exitCode int) {
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Labels[FailLabel] = "true"
	t.Annotations[FailReasonAnnotation] = reason
	t.Annotations[FailExitCodeAnnotation] = strconv.Itoa(exitCode)
}

// RunForAnnotation on a pod that a Job owns holds it Running for its duration (e.g. "30s")
// before kwok completes it, instead of about a second.
const RunForAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"

// DemoRunForEnv is the environment variable that holds a Job's pod Running for its duration
// (a Go duration, "1h"), as RunForAnnotation does, when the pod's first container has it: a
// gpuctl file can set it (environment.env) where it cannot annotate its pods. For the demo
// only (make demo-fleet's jobs that hold their GPUs); on a real cluster it does nothing.
const DemoRunForEnv = "GPUCTL_DEMO_RUN_FOR"

// RunFor marks a pod template so that kwok keeps its pods Running for d before they succeed:
// a job that holds its GPUs for a while.
func RunFor(t *corev1.PodTemplateSpec, d time.Duration) {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[RunForAnnotation] = d.String()
}

// kwokConfig is kwok's --config: its options and the Stage objects that drive node and pod
// status (see the comment at the top of kwok.yaml).
//
//go:embed kwok.yaml
var kwokConfig []byte

// kwokCRDs are the CustomResourceDefinitions of kwok's Logs and ClusterLogs, which kwok reads
// from the cluster (--enable-crds) to serve pod logs from files (see Cluster.WritePodLog).
//
//go:embed kwok-crds.yaml
var kwokCRDs []byte

// kwokArgs writes the kwok configuration into dir and returns kwok's command line. kwok's
// server listens on NodeIP:p.kubelet with the certificate the cluster CA signed for it; the
// nodes report that port as their kubelet endpoint and NodeIP as their InternalIP, so that
// the API server's pod-log requests reach it.
func kwokArgs(dir, kubeconfig string, p ports, creds *credentials) ([]string, error) {
	path := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(path, kwokConfig, 0o644); err != nil {
		return nil, err
	}
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + path,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokAnnotation + "=" + KwokAnnotationValue,
		"--node-ip=" + NodeIP,
		"--node-port=" + strconv.Itoa(p.kubelet),
		"--server-address=" + net.JoinHostPort(NodeIP, strconv.Itoa(p.kubelet)),
		"--tls-cert-file=" + creds.files.kwokCert,
		"--tls-private-key-file=" + creds.files.kwokKey,
		"--enable-crds=Logs,ClusterLogs",
	}, nil
}
