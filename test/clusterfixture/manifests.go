package clusterfixture

import (
	"fmt"
	"strconv"
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
