package app

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
)

// TestAPIWritesPassTheReview (issue #30, finding 3), against a Git server and the cluster: with
// the administrator's policy (maxGPUsPerJob 8, one registry, no team with priority high), alice's
// token can neither create a 64-GPU job of priority high from docker.io nor scale her service to
// 100,000 replicas: each is 400 with the review's violations, and nothing is committed; a write
// within the policy is committed.
func TestAPIWritesPassTheReview(t *testing.T) {
	tm := newTeam("wp")
	g := newGitRemote(t, tm)
	g.Commit("the policy, 16 GPUs for alice and a service", map[string]string{
		"quotas/quota.yaml":  strings.Replace(tm.quota(), "memory: 200Gi, gpu: 0}", "memory: 200Gi, gpu: 16}", 1),
		"gpuctl-policy.yaml": "version: v0.1\nmaxGPUsPerJob: 8\nallowedRegistries: [registry.example.com]\nhighPriorityTeams: []\n",
		"teams/" + tm.alice + "/serve.yaml": "kind: inference\nversion: v0.1\njob: {name: serve}\n" +
			"environment: {image: registry.example.com/vllm:v0.6.0}\nservice: {replicas: 0, port: 8000}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\n",
	})
	d := startWriteDaemon(t, tm, "--source", "git:"+g.authURL, "--ref", "main", "--git-push", "--git-poll-interval", "0",
		"--work-dir", filepath.Join(t.TempDir(), "clone"))

	before := g.head()
	miner := "kind: training\nversion: v0.1\njob: {name: miner, priority: high}\nenvironment:\n  image: docker.io/evil/miner:latest\n" +
		"  command: [mine]\nresources: {gpu: 8, node_count: 8, cpu: 1, memory: 1Gi}\n"
	for name, c := range map[string]struct {
		path  string
		body  any
		rules []string
	}{
		"create": {"/api/v1/jobs", httpapi.CreateRequest{YAMLContent: miner}, []string{"allowedRegistries", "highPriorityTeams", "maxGPUsPerJob", "quota"}},
		"scale":  {"/api/v1/jobs/" + tm.alice + ".serve/scale", httpapi.ScaleRequest{Replicas: ptr(100000)}, []string{"maxGPUsPerJob", "quota"}},
		"batch":  {"/api/v1/jobs/batch", httpapi.BatchCreateRequest{YAMLContents: []string{training("ok", ""), miner}}, []string{"allowedRegistries", "highPriorityTeams", "maxGPUsPerJob", "quota"}},
	} {
		code, body := d.call(http.MethodPost, c.path, aliceToken, c.body, nil)
		var e httpapi.Error
		_ = json.Unmarshal([]byte(body), &e)
		var rules []string
		for _, v := range e.Violations {
			rules = append(rules, string(v.Rule))
		}
		slices.Sort(rules)
		if code != http.StatusBadRequest || !slices.Equal(slices.Compact(rules), c.rules) || !strings.Contains(e.Message, "error: [maxGPUsPerJob]") {
			t.Errorf("%s: %d %s, want 400 with the violations %v", name, code, body, c.rules)
		}
	}
	if g.head() != before {
		t.Fatalf("a refused write was committed: %s", g.Run(g.Bare, "log", "-1", "--format=%s", "main"))
	}
	if code, body := d.call(http.MethodPost, "/api/v1/jobs/"+tm.alice+".serve/scale", aliceToken, httpapi.ScaleRequest{Replicas: ptr(2)}, nil); code != http.StatusOK {
		t.Fatalf("a scale within the policy: %d %s", code, body)
	}
	if code, _, body := d.create(aliceToken, training("sft", "")); code != http.StatusCreated {
		t.Fatalf("a create within the policy: %d %s", code, body)
	}
}

func ptr(n int) *int { return &n }
