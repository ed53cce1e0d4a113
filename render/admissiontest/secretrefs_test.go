package admissiontest

import (
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

// TestRenderedSecretReferencesAllowed: gpuctl's own workloads of a tenant directory that
// take variables and files from Secrets (docs/format.md §3.4) — a training Job, an inference
// Deployment, a notebook StatefulSet — pass the admission policy (secret volumes are an
// allowed type), and their pods are created.
func TestRenderedSecretReferencesAllowed(t *testing.T) {
	e := setup(t)
	refs := `  env:
    - {name: HF_TOKEN, secret: {name: admitted-creds, key: token}}
  envFrom: [{secret: admitted-creds, prefix: CREDS_}]
storage:
  secrets: [{name: admitted-creds, path: /etc/creds}]
`
	fs, err := render.MemFS("/repo", map[string]string{
		".gpuctl.yaml":              "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"teams/alice/creds.yaml":    "apiVersion: v1\nkind: Secret\nmetadata: {name: admitted-creds}\nstringData: {token: not-a-secret}\n",
		"teams/alice/train.yaml":    "kind: training\nversion: v0.1\njob: {name: admitted-secret-training}\nenvironment:\n  image: pytorch/pytorch:2.3.1\n" + refs + "resources: {gpu: 1}\n",
		"teams/alice/serve.yaml":    "kind: inference\nversion: v0.1\njob: {name: admitted-secret-inference}\nenvironment:\n  image: vllm/vllm-openai\n" + refs + "service: {port: 8000}\n",
		"teams/alice/notebook.yaml": "kind: notebook\nversion: v0.1\njob: {name: admitted-secret-lab}\nenvironment:\n  image: jupyter/base-notebook\n" + refs,
	})
	if err != nil {
		t.Fatal(err)
	}
	applyAndWaitForPods(t, e, renderTree(t, fs, "/repo"))
}
