package app_test

import (
	"strings"
	"testing"
)

// TestWritesPassTheReview (issue #30, finding 3): a write verb that commits to the checkout's
// branch, which gpuctl-reconciler may follow, passes the review's checks as the API's writes
// do: a 64-GPU job of priority high from docker.io is refused (exit 1) with the review's
// violations, even with --dry-run, and nothing is committed; with --branch its pull request's
// review judges it.
func TestWritesPassTheReview(t *testing.T) {
	_, clone := newClone(t)
	writeFile(t, clone, "gpuctl-policy.yaml", "version: v0.1\nmaxGPUsPerJob: 8\nallowedRegistries: [registry.example.com]\nhighPriorityTeams: []\n")
	git(t, clone, "add", "gpuctl-policy.yaml")
	git(t, clone, "commit", "-q", "-m", "the policy")
	miner := writeFile(t, t.TempDir(), "miner.yaml", "kind: training\nversion: v0.1\njob: {name: miner, priority: high}\n"+
		"environment:\n  image: docker.io/evil/miner:latest\n  command: [mine]\nresources: {gpu: 8, node_count: 8}\n")
	head := git(t, clone, "rev-parse", "HEAD")
	for _, dry := range []bool{true, false} {
		args := []string{"create", "-f", miner, "--repo", clone}
		if dry {
			args = append(args, "--dry-run")
		}
		_, errOut, code := run(t, args...)
		for _, s := range []string{"teams/alice/miner.yaml:", "error: [maxGPUsPerJob] Job alice/miner requests 64 GPUs in all",
			"[allowedRegistries]", "[highPriorityTeams]", "error: [quota] team alice requests 64 GPUs, above its quota of 8"} {
			if code != 1 || !strings.Contains(errOut, s) {
				t.Errorf("dry run %v: exit %d, want 1 and %q:\n%s", dry, code, s, errOut)
			}
		}
	}
	if git(t, clone, "rev-parse", "HEAD") != head || git(t, clone, "status", "--porcelain") != "" {
		t.Fatal("a refused write changed the checkout")
	}
	if out, errOut, code := run(t, "create", "-f", miner, "--branch", "add-miner", "--repo", clone); code != 0 || !strings.Contains(out, "on new branch add-miner") {
		t.Fatalf("--branch: exit %d:\n%s%s", code, out, errOut)
	}
	if _, errOut, code := run(t, "scale", "inference", "chat", "--replicas", "3", "--repo", clone); code != 0 {
		t.Fatalf("a write within the policy: exit %d:\n%s", code, errOut)
	}
}
