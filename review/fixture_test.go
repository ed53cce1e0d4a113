package review_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/test/gittest"
)

// The fixture repository: two teams (namespaces alice and bob by .gpuctl.yaml), two pools,
// their quotas and a policy. Each step is one commit, tagged with its name.
const (
	fixtureConfig = "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n"
	fixturePools  = `kind: pool
version: v0.1
metadata: {name: training-pool}
nodes:
  gpu-a100-0: {gpu-type: A100-80G}
  gpu-a100-1: {gpu-type: A100-80G}
---
kind: pool
version: v0.1
metadata: {name: inference-pool}
nodes:
  gpu-h100-0: {gpu-type: H100-80G}
`
	fixtureQuota = `kind: quota
version: v0.1
metadata: {name: teams}
users:
  alice:
    cpu: 64
    memory: 256Gi
    gpu: 8
  bob:
    cpu: 32
    memory: 128Gi
    gpu: 4
`
	fixturePolicy = `version: v0.1
maxGPUsPerJob: 16
allowedRegistries: [registry.example.com, docker.io/library]
highPriorityTeams: [alice]
severity:
  gpuType: warning
`
)

func training(name, pool, gpuType string, gpu, nodes int, extra string) string {
	return fmt.Sprintf(`kind: training
version: v0.1
job:
  name: %s
%s
environment:
  image: registry.example.com/llama-factory:v0.8.0
  command: [llamafactory-cli, train]
resources:
  pool: %s
  gpu: %d
  gpu-type: %s
  cpu: 16
  memory: 64Gi
  node_count: %d
`, name, extra, pool, gpu, gpuType, nodes)
}

func inference(name string, replicas int, extra string) string {
	return fmt.Sprintf(`kind: inference
version: v0.1
job:
  name: %s
%s
environment:
  image: registry.example.com/vllm:v0.6.0
service:
  replicas: %d
  port: 8000
resources:
  pool: inference-pool
  gpu: 1
  gpu-type: H100-80G
  cpu: 8
  memory: 32Gi
`, name, extra, replicas)
}

// fixtureStep is one commit of the fixture repository.
type fixtureStep struct {
	tag   string
	files map[string]string // "" deletes a file
}

var fixtureSteps = []fixtureStep{
	{"initial", map[string]string{
		".gpuctl.yaml": fixtureConfig, "gpuctl-policy.yaml": fixturePolicy,
		"pools/pools.yaml": fixturePools, "quotas/teams.yaml": fixtureQuota,
		"teams/bob/serve.yaml": inference("bob-serve", 1, ""),
	}},
	{"add-job", map[string]string{"teams/alice/sft.yaml": training("alice-sft", "training-pool", "A100-80G", 2, 1, "")}},
	{"raise-replicas", map[string]string{"teams/bob/serve.yaml": inference("bob-serve", 3, "")}},
	{"move-pool", map[string]string{"teams/alice/sft.yaml": training("alice-sft", "inference-pool", "H100-80G", 2, 1, "")}},
	{"exceed-quota", map[string]string{"teams/alice/pretrain.yaml": training("alice-pretrain", "training-pool", "A100-80G", 8, 2, "  priority: high")}},
	{"escape-namespace", map[string]string{"teams/bob/sneaky.yaml": strings.Replace(
		training("bob-sneaky", "training-pool", "A100-80G", 1, 1, "  namespace: alice"), "node_count: 1\n", "", 1)}},
	{"delete-file", map[string]string{"teams/bob/sneaky.yaml": "", "teams/bob/serve.yaml": ""}},
	{"policy-limits", map[string]string{"teams/bob/rogue.yaml": strings.NewReplacer(
		"registry.example.com/llama-factory:v0.8.0", "ghcr.io/rogue/trainer:latest",
		"pool: training-pool", "pool: gpu-pool",
	).Replace(training("bob-rogue", "training-pool", "V100-32G", 9, 2, "  priority: high"))}},
}

// newFixture builds the fixture repository with the git CLI and returns it.
func newFixture(t testing.TB) *gittest.Remote { return fixtureRepo(t, fixtureSteps) }

// fixtureRepo builds a repository of steps, each a commit tagged with its name.
func fixtureRepo(t testing.TB, steps []fixtureStep) *gittest.Remote {
	t.Helper()
	r := gittest.New(t, nil)
	for _, s := range steps {
		r.Commit(s.tag, s.files)
		r.Git("tag", s.tag)
	}
	return r
}
