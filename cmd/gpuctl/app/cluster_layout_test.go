package app_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// layoutPool is a pool file declaring pool name with node.
func layoutPool(name, node string) string {
	return "kind: pool\nversion: v0.1\nmetadata: {name: " + name + "}\nnodes:\n  " + node + ": {gpu-type: A100-80G}\n"
}

// layoutFiles are a repository of two clusters: a's pool and a broken file of a's, b's pool
// and a team job of b's, and a shared team job.
func layoutFiles() map[string]string {
	return map[string]string{
		".gpuctl.yaml":                "namespaces: [{path: teams/*/**, namespace: $1}]\n",
		"teams/alice/sft.yaml":        job,
		"clusters/a/pools.yaml":       layoutPool("a-pool", "a-0"),
		"clusters/b/pools.yaml":       layoutPool("b-pool", "b-0"),
		"clusters/b/teams/bob/b.yaml": strings.Replace(job, "name: sft", "name: b-sft", 1),
	}
}

// TestClusterFlag: validate, render and diff --base render what the cluster of --cluster
// gets: the shared files and its own directory, not the other clusters'.
func TestClusterFlag(t *testing.T) {
	dir := t.TempDir()
	for name, content := range layoutFiles() {
		writeFile(t, dir, name, content)
	}
	broken := writeFile(t, dir, "clusters/a/broken.yaml", "kind: pool\nversion: v0.1\nmetadata: [\n")
	if out, _, code := run(t, "validate", dir, "--cluster", "b"); code != 0 || !strings.Contains(out, "valid: 3 files") {
		t.Errorf("validate --cluster b: exit %d\n%s", code, out)
	}
	if out, _, code := run(t, "validate", dir, "--cluster", "a"); code != app.ExitFailed || !strings.Contains(out, broken+":") {
		t.Errorf("validate --cluster a: exit %d, want %d naming %s\n%s", code, app.ExitFailed, broken, out)
	}
	if _, errOut, code := run(t, "validate", dir, "--cluster", "c"); code != app.ExitTrouble || !strings.Contains(errOut, "no directory clusters/c/") {
		t.Errorf("validate --cluster c: exit %d\n%s", code, errOut)
	}
	out, errOut, code := run(t, "validate", dir)
	if code != app.ExitFailed && code != 0 || !strings.Contains(out, "clusters/ is not rendered") {
		t.Errorf("validate without --cluster: exit %d, no warning about clusters/\n%s%s", code, out, errOut)
	}
	writeFile(t, dir, "clusters/a/broken.yaml", layoutPool("a-extra", "a-1"))
	out, errOut, code = run(t, "render", dir, "--cluster", "a")
	if code != 0 || !strings.Contains(out, "gpuctl-pool-a-pool") || strings.Contains(out, "b-pool") || strings.Contains(out, "b-sft") || !strings.Contains(out, "name: sft") {
		t.Errorf("render --cluster a: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "render", dir, "--cluster", "b")
	if code != 0 || !strings.Contains(out, "namespace: bob") || !strings.Contains(out, "b-sft") || strings.Contains(out, "a-pool") {
		t.Errorf("render --cluster b: exit %d\n%s%s", code, out, errOut)
	}
}

// TestClusterDiffBase: the review of a change in clusters/a/ for cluster a shows a's budget
// (and fails on the change, as --fail-on changes does); for cluster b, no change. So do the
// pull-request comments (-o markdown): a's, under its own marker, has the GPU budget with the
// change's 6 GPUs; b's has no budget and no change.
func TestClusterDiffBase(t *testing.T) {
	r := gittest.New(t, nil)
	r.Commit("base", layoutFiles())
	r.Git("tag", "base")
	r.Commit("a", map[string]string{"clusters/a/jobs/big.yaml": strings.Replace(strings.Replace(job, "name: sft", "name: big", 1), "gpu: 2", "gpu: 6", 1)})
	out, errOut, code := run(t, "diff", r.Work, "--base", "base", "--cluster", "a")
	if code != app.ExitFailed || !strings.Contains(out, "cluster a") || !strings.Contains(out, "+ added Job default/big (clusters/a/jobs/big.yaml)") || !strings.Contains(out, "GPUs 2 → 8") {
		t.Errorf("diff --cluster a: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "diff", r.Work, "--base", "base", "--cluster", "b")
	if code != 0 || !strings.Contains(out, "0 added, 0 changed, 0 removed") || !strings.Contains(out, "cluster b") {
		t.Errorf("diff --cluster b: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = run(t, "diff", r.Work, "--base", "base", "--cluster", "a", "-o", "markdown")
	if code != app.ExitFailed || !strings.HasPrefix(out, "<!-- gpuctl-review cluster=a -->\n") || !strings.Contains(out, "**GPUs 2 → 8 (+6)**") ||
		!strings.Contains(out, "#### GPU budget") || !strings.Contains(out, "| default | default | any | 0 | 6 | **+6** |") ||
		!strings.Contains(out, "clusters/a/jobs/big.yaml") {
		t.Errorf("diff --cluster a -o markdown: exit %d, want a's comment with the budget of big's 6 GPUs\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "diff", r.Work, "--base", "base", "--cluster", "b", "-o", "markdown")
	if code != 0 || !strings.HasPrefix(out, "<!-- gpuctl-review cluster=b -->\n") || !strings.Contains(out, "**0 added, 0 changed, 0 removed** · **GPUs 4 (unchanged)**") ||
		strings.Contains(out, "GPU budget") || strings.Contains(out, "big") {
		t.Errorf("diff --cluster b -o markdown: exit %d, want b's comment without a budget or a's change\n%s%s", code, out, errOut)
	}
}
