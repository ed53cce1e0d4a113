package clusterfixture

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// JobManifest is the plain manifest of suspended training Job j of namespace ns, named
// <ns>-NNNNN, that the benchmarks and tests of large repositories write by the thousand (one
// GPU, a seed of its own); with label g8s.test/edit: edit when edit is set.
func JobManifest(ns string, j int, edit string) string {
	labels := "g8s.host/job-type: training"
	if edit != "" {
		labels += ", g8s.test/edit: " + strconv.Quote(edit)
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s-%05d, namespace: %s, labels: {%s}}
spec:
  suspend: true
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: registry.example.com/llama-factory:v0.8.0
          command: [llamafactory-cli, train, --stage, sft, --seed, "%d"]
          resources: {limits: {nvidia.com/gpu: "1", cpu: "1", memory: 1Gi}, requests: {nvidia.com/gpu: "1", cpu: "1", memory: 1Gi}}
`, ns, j, ns, labels, j)
}

// QuotaComputed waits until the quota controller has computed the status of quota name in ns,
// polling every 50 ms until ctx ends: until then the API server refuses every pod of the
// namespace ("status unknown for quota"), and the Job and ReplicaSet controllers back off for
// longer after each refusal.
func QuotaComputed(ctx context.Context, kube kubernetes.Interface, ns, name string) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) > 0, nil
	})
}
