package app_test

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// newFleetClone serves a remote holding gitOpsFiles and the directories of two clusters, a
// and b (docs/fleet.md), and returns a clone of it.
func newFleetClone(t *testing.T) string {
	t.Helper()
	gitUser(t, "alice@example.com")
	files := maps.Clone(gitOpsFiles)
	files["clusters/a/teams/bob/a-sft.yaml"] = "kind: training\nversion: v0.1\njob: {name: a-sft}\nenvironment: {image: x}\n"
	files["clusters/b/pools.yaml"] = "kind: pool\nversion: v0.1\nmetadata: {name: b-pool}\nnodes:\n  b-0: {gpu-type: A100-80G}\n"
	rem := gittest.New(t, nil)
	rem.Commit("two clusters", files)
	clone := filepath.Join(t.TempDir(), "gitops")
	git(t, filepath.Dir(clone), "clone", "-q", rem.URL, clone)
	return clone
}

// TestCreateForACluster (issue 37): in a repository of several clusters, create --cluster a
// commits the team's file to clusters/a/teams/alice/, which only a runs; without --cluster
// it goes to the shared teams/alice/ as before, with a warning that every cluster runs it,
// naming the flag; --path to a shared directory with --cluster says so too. A --cluster
// with no directory is validate --cluster's error, and nothing is committed. In a
// repository of one cluster --cluster changes nothing and warns of nothing.
func TestCreateForACluster(t *testing.T) {
	clone := newFleetClone(t)
	in := writeFile(t, t.TempDir(), "qwen2-7b-sft.yaml", newSFT)
	out, errOut, code := run(t, "create", "-f", in, "--repo", clone, "--cluster", "a")
	mine := "clusters/a/teams/alice/qwen2-7b-sft.yaml"
	if code != 0 || strings.Contains(errOut, "warning") || !strings.Contains(out, "created "+mine) {
		t.Fatalf("create --cluster a: exit %d\n%s%s", code, out, errOut)
	}
	if got := readFile(t, filepath.Join(clone, mine)); got != newSFT {
		t.Fatalf("the file, not kept byte for byte:\n%s", got)
	}
	if files := git(t, clone, "show", "--name-status", "--format=%B", "HEAD"); !strings.Contains(files, "alice.qwen2-7b-sft: "+mine) || !strings.HasSuffix(files, "A\t"+mine) {
		t.Fatalf("the commit:\n%s", files)
	}

	// Without --cluster: the shared directory, and a warning naming the flag.
	other := writeFile(t, t.TempDir(), "other.yaml", strings.Replace(newSFT, "qwen2-7b-sft", "other", 1))
	out, errOut, code = run(t, "create", "-f", other, "--repo", clone)
	want := "teams/alice/other.yaml: warning: in a shared directory: every cluster of the repository runs it (a, b), --cluster NAME creates it in clusters/NAME/ for that cluster alone"
	if code != 0 || !strings.Contains(out, "created teams/alice/other.yaml") || !strings.Contains(errOut, want) {
		t.Fatalf("create without --cluster: exit %d\n%s%s\nwant the warning %s", code, out, errOut, want)
	}
	// --cluster with a shared --path: the path wins, with a warning.
	third := writeFile(t, t.TempDir(), "third.yaml", strings.Replace(newSFT, "qwen2-7b-sft", "third", 1))
	out, errOut, code = run(t, "create", "-f", third, "--repo", clone, "--cluster", "b", "--path", "teams/alice", "--dry-run")
	if code != 0 || !strings.Contains(errOut, "not only b: --path clusters/b/teams/alice creates it for b alone") {
		t.Errorf("create --cluster b --path teams/alice: exit %d\n%s%s", code, out, errOut)
	}

	// An unknown cluster: validate's error.
	head := git(t, clone, "rev-parse", "HEAD")
	_, validateErr, _ := run(t, "validate", clone, "--cluster", "nope")
	_, errOut, code = run(t, "create", "-f", third, "--repo", clone, "--cluster", "nope")
	if line := strings.TrimSpace(validateErr); code != app.ExitFailed || !strings.Contains(line, `cluster "nope": no directory clusters/nope/`) || !strings.Contains(errOut, line) {
		t.Errorf("create --cluster nope: exit %d\n%s\nwant validate's error:\n%s", code, errOut, validateErr)
	}
	if git(t, clone, "rev-parse", "HEAD") != head || git(t, clone, "status", "--porcelain") != "" {
		t.Errorf("a refused create changed the clone")
	}

	// A repository of one cluster: --cluster names none of its directories.
	_, one := newClone(t)
	out, errOut, code = run(t, "create", "-f", in, "--repo", one, "--cluster", "a")
	if code != 0 || strings.Contains(errOut, "warning") || !strings.Contains(out, "created teams/alice/qwen2-7b-sft.yaml") {
		t.Errorf("one cluster, --cluster a: exit %d\n%s%s", code, out, errOut)
	}
}

// TestEditsForACluster: pause, scale and delete --cluster a find a job of clusters/a/ and edit
// its file there; without --cluster, the error says that the jobs of clusters/ are not read.
func TestEditsForACluster(t *testing.T) {
	clone := newFleetClone(t)
	_, errOut, code := run(t, "pause", "job", "bob.a-sft", "--repo", clone)
	if code != app.ExitFailed || !strings.Contains(errOut, `no file of the repository declares job "bob.a-sft" (without --cluster NAME, the jobs of clusters/NAME/ are not read)`) {
		t.Errorf("pause without --cluster: exit %d\n%s", code, errOut)
	}
	out, errOut, code := run(t, "pause", "job", "bob.a-sft", "--repo", clone, "--cluster", "a")
	if code != 0 || !strings.Contains(out, "modified clusters/a/teams/bob/a-sft.yaml") {
		t.Fatalf("pause --cluster a: exit %d\n%s%s", code, out, errOut)
	}
	if got := readFile(t, filepath.Join(clone, "clusters/a/teams/bob/a-sft.yaml")); !strings.Contains(got, "suspend: true") {
		t.Errorf("the paused file:\n%s", got)
	}
	if _, errOut, code := run(t, "delete", "job", "bob.a-sft", "--repo", clone, "--cluster", "b"); code != app.ExitFailed || !strings.Contains(errOut, "no file of the repository declares job") {
		t.Errorf("delete of a's job --cluster b: exit %d\n%s", code, errOut)
	}
}
