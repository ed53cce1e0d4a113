package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// The write verbs against real Git repositories made with the git CLI: a remote served by
// git http-backend on 127.0.0.1 (test/gittest), and a clone of it that gpuctl commits in.

// gitOpsFiles is a repository with two teams.
var gitOpsFiles = map[string]string{
	".gpuctl.yaml":         "# the admin's settings\nversion: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\nteams:\n  alice@example.com: alice\n  bob@example.com: bob\n",
	"quotas/teams.yaml":    "kind: quota\nversion: v0.1\nmetadata: {name: teams}\nusers:\n  alice: {gpu: 8}\n  bob: {gpu: 8}\n",
	"teams/alice/sft.yaml": "# alice's fine-tuning\nkind: training\nversion: v0.1\njob:\n  name: sft\nenvironment:\n  image: pytorch/pytorch:2.3.0\n",
	"teams/alice/services.yaml": "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: vllm}\nservice:\n  port: 8000\n  replicas: 2\n" +
		"---\n# the embedding service\nkind: compute\nversion: v0.1\njob: {name: embed}\nenvironment: {image: bge}\n" +
		"---\nkind: notebook\nversion: v0.1\njob: {name: lab}\nenvironment: {image: jupyter}\n",
	"teams/bob/sft.yaml": "kind: training\nversion: v0.1\njob: {name: sft}\nenvironment: {image: x}\n",
}

// gitUser isolates the git CLI that gpuctl runs from the machine's configuration: a global
// configuration of its own with the user alice@example.com, and no system one.
func gitUser(t *testing.T, email string) {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, []byte("[user]\n\tname = Test User\n\temail = "+email+"\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", home)
	for _, v := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_DIR", "GIT_WORK_TREE"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}

// git runs git in dir with the test's environment.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newClone serves a remote holding gitOpsFiles and returns it and a clone of it over HTTP.
func newClone(t *testing.T) (*gittest.Remote, string) {
	t.Helper()
	gitUser(t, "alice@example.com")
	rem := gittest.New(t, nil)
	rem.Commit("initial", gitOpsFiles)
	clone := filepath.Join(t.TempDir(), "gitops")
	git(t, filepath.Dir(clone), "clone", "-q", rem.URL, clone)
	return rem, clone
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const newSFT = "# Qwen2 7B SFT\nkind: training\nversion: v0.1\njob:\n  name: qwen2-7b-sft\n  priority: high   # deadline friday\nenvironment:\n  image: \"llama-factory:v0.8\"\n"

func TestCreateCommitsInTheTeamsDirectory(t *testing.T) {
	_, clone := newClone(t)
	in := writeFile(t, t.TempDir(), "qwen2-7b-sft.yaml", newSFT)
	out, errOut, code := run(t, "create", "-f", in, "--repo", clone)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if got := readFile(t, filepath.Join(clone, "teams/alice/qwen2-7b-sft.yaml")); got != newSFT {
		t.Fatalf("file not kept byte for byte:\n%s", got)
	}
	if msg := git(t, clone, "log", "-1", "--format=%B"); !strings.HasPrefix(msg, "gpuctl: create training qwen2-7b-sft (alice)\n\nalice.qwen2-7b-sft: teams/alice/qwen2-7b-sft.yaml") {
		t.Fatalf("commit message:\n%s", msg)
	}
	if files := git(t, clone, "show", "--name-status", "--format=", "HEAD"); files != "A\tteams/alice/qwen2-7b-sft.yaml" {
		t.Fatalf("commit holds:\n%s", files)
	}
	if st := git(t, clone, "status", "--porcelain"); st != "" {
		t.Fatalf("work tree not clean:\n%s", st)
	}
	if !strings.Contains(out, "committed ") || !strings.Contains(out, "created teams/alice/qwen2-7b-sft.yaml") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestCreateWithoutATeam (issue 35): create without --team nor --path, by someone whom teams:
// of .gpuctl.yaml does not list, puts the files where the API puts an admin's (docs/daemon.md):
// a file whose jobs land in namespace default in the directory named after its first
// workload's kind, or in defaultNamespaceDir once .gpuctl.yaml sets it, under clusters/NAME/
// with --cluster; a file whose job.namespace names a team in that team's directory. A file with
// no workload and no defaultNamespaceDir is refused, saying what to give; nothing is committed.
func TestCreateWithoutATeam(t *testing.T) {
	_, clone := newClone(t)
	gitUser(t, "admin@example.com")
	dir := t.TempDir()
	create := func(t *testing.T, clone string, want string, args ...string) {
		t.Helper()
		out, errOut, code := run(t, append([]string{"create", "--repo", clone}, args...)...)
		if code != 0 || !strings.Contains(out, "created "+want) {
			t.Fatalf("exit %d, want %s created:\n%s%s", code, want, out, errOut)
		}
		if files := git(t, clone, "show", "--name-status", "--format=", "HEAD"); files != "A\t"+want {
			t.Fatalf("commit holds:\n%s", files)
		}
	}

	create(t, clone, "training/qwen2-7b-sft.yaml", "-f", writeFile(t, dir, "qwen2-7b-sft.yaml", newSFT))
	if msg := git(t, clone, "log", "-1", "--format=%B"); !strings.HasPrefix(msg, "gpuctl: create training qwen2-7b-sft (admin@example.com)\n\ndefault.qwen2-7b-sft: training/qwen2-7b-sft.yaml") {
		t.Fatalf("commit message:\n%s", msg)
	}
	create(t, clone, "teams/bob/web.yaml", "-f", writeFile(t, dir, "web.yaml", "kind: compute\nversion: v0.1\njob: {name: web, namespace: bob}\nenvironment: {image: x}\n"))

	head := git(t, clone, "rev-parse", "HEAD")
	cm := writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n")
	_, errOut, code := run(t, "create", "--repo", clone, "-f", cm)
	want := `no directory for namespace default: the file has no workload to name one after, and .gpuctl.yaml sets no defaultNamespaceDir; or give --path or --team (your user.email "admin@example.com" is not in teams: of .gpuctl.yaml)`
	if code != app.ExitFailed || !strings.Contains(errOut, want) {
		t.Fatalf("a file without a workload: exit %d, want %s:\n%s", code, want, errOut)
	}
	if git(t, clone, "rev-parse", "HEAD") != head || git(t, clone, "status", "--porcelain", "--untracked-files=all") != "" {
		t.Fatal("a refused create changed the clone")
	}

	writeFile(t, clone, ".gpuctl.yaml", gitOpsFiles[".gpuctl.yaml"]+"defaultNamespaceDir: jobs/shared\n")
	git(t, clone, "commit", "-qam", "defaultNamespaceDir")
	create(t, clone, "jobs/shared/cm.yaml", "-f", cm)
	create(t, clone, "jobs/shared/chat.yaml", "-f", writeFile(t, dir, "chat.yaml", "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: vllm}\nservice: {port: 8000}\n"))

	fleet := newFleetClone(t)
	gitUser(t, "admin@example.com")
	create(t, fleet, "clusters/a/training/qwen2-7b-sft.yaml", "-f", writeFile(t, dir, "qwen2-7b-sft.yaml", newSFT), "--cluster", "a")
}

func TestCreateRefusals(t *testing.T) {
	_, clone := newClone(t)
	head := git(t, clone, "rev-parse", "HEAD")
	dir := t.TempDir()
	cases := map[string]struct {
		args []string
		want string
	}{
		"existing name": {args: []string{"-f", writeFile(t, dir, "sft2.yaml", "kind: training\nversion: v0.1\njob: {name: sft}\nenvironment: {image: x}\n")},
			want: `error: ` + filepath.Join(dir, "sft2.yaml") + `: training "sft" already exists in namespace "alice" (teams/alice/sft.yaml)`},
		"invalid YAML with its line": {args: []string{"-f", writeFile(t, dir, "bad.yaml", "kind: training\nversion: v0.1\njob:\n  name: x\n  gpu: `2`\n")},
			want: filepath.Join(dir, "bad.yaml") + `:5: invalid YAML`},
		"unknown field with its line and column": {args: []string{"-f", writeFile(t, dir, "typo.yaml", "kind: training\nversion: v0.1\njob: {name: typo}\nenvironment: {image: x}\nresources: {gpu_tpye: A100}\n")},
			want: filepath.Join(dir, "typo.yaml") + `:5:13: resources.gpu_tpye: unknown field "gpu_tpye", did you mean "gpu-type"?`},
		"another team's namespace": {args: []string{"-f", writeFile(t, dir, "b.yaml", "kind: training\nversion: v0.1\njob: {name: b, namespace: bob}\nenvironment: {image: x}\n")},
			want: filepath.Join(dir, "b.yaml") + `:3:27: job.namespace: files in teams/alice/ belong to namespace "alice" and cannot place jobs in "bob"`},
		"path out of the repository": {args: []string{"-f", writeFile(t, dir, "ok.yaml", newSFT), "--path", "../elsewhere"},
			want: `path "../elsewhere": a ".." segment: must be a clean path inside the repository`},
		"absolute path": {args: []string{"-f", writeFile(t, dir, "ok2.yaml", newSFT), "--path", "/tmp"},
			want: `path "/tmp": must be relative to the repository`},
		"wait without push": {args: []string{"-f", writeFile(t, dir, "ok3.yaml", newSFT), "--wait"},
			want: "--wait needs --push"},
		".GIT directory": {args: []string{"-f", writeFile(t, dir, "g1.yaml", newSFT), "--path", "teams/alice/.GIT"},
			want: `path "teams/alice/.GIT": ".GIT" is .git to Git`},
		"GIT~1 directory": {args: []string{"-f", writeFile(t, dir, "g2.yaml", newSFT), "--path", "teams/alice/GIT~1"},
			want: `path "teams/alice/GIT~1": "GIT~1" is .git to Git`},
		".git. directory": {args: []string{"-f", writeFile(t, dir, "g3.yaml", newSFT), "--path", "teams/alice/.git."},
			want: `".git." is .git to Git`},
		"a dot directory": {args: []string{"-f", writeFile(t, dir, "cm.yaml", newSFT), "--path", "teams/alice/.x"},
			want: `path "teams/alice/.x": ".x" starts with a dot`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"create", "--repo", clone}, c.args...)...)
			if code != 1 || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, want 1 and %q:\n%s%s", code, c.want, out, errOut)
			}
			if now := git(t, clone, "rev-parse", "HEAD"); now != head {
				t.Fatal("a commit was made")
			}
			if st := git(t, clone, "status", "--porcelain", "--untracked-files=all"); st != "" {
				t.Fatalf("work tree changed:\n%s", st)
			}
		})
	}
}

// TestWriteVerbsBesideAnyFileName: a file whose name Git takes but kyaml's in-memory
// filesystem refuses (teams/bob/notes (old).md) stops no write verb, with --dry-run or not.
func TestWriteVerbsBesideAnyFileName(t *testing.T) {
	rem, clone := newClone(t)
	rem.Commit("bob's notes", map[string]string{"teams/bob/notes (old).md": "old notes\n", "teams/bob/résumé ✓.txt": "r\n"})
	git(t, clone, "pull", "-q")
	in := writeFile(t, t.TempDir(), "new.yaml", newSFT)
	for _, args := range [][]string{
		{"create", "-f", in, "--dry-run"},
		{"scale", "inference", "chat", "--replicas", "3", "--dry-run"},
		{"create", "-f", in},
		{"pause", "job", "alice.sft"},
	} {
		if out, errOut, code := run(t, append(args, "--repo", clone)...); code != 0 {
			t.Errorf("gpuctl %s: exit %d:\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if files := git(t, clone, "log", "-2", "--name-status", "--format="); files != "M\tteams/alice/sft.yaml\nA\tteams/alice/new.yaml" {
		t.Errorf("the commits of create and pause hold:\n%s", files)
	}
}

// TestSymlinkedTeamDirectory: a team directory that is a symbolic link out of the repository
// is not written through.
func TestSymlinkedTeamDirectory(t *testing.T) {
	_, clone := newClone(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(clone, "teams", "carol")); err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, t.TempDir(), "x.yaml", newSFT)
	_, errOut, code := run(t, "create", "-f", in, "--team", "carol", "--repo", clone)
	if code != 1 || !strings.Contains(errOut, `path "teams/carol/x.yaml": leaves the repository through a symbolic link (teams/carol)`) {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatal("wrote outside the repository")
	}
}

func TestDeleteOneDocumentOfThree(t *testing.T) {
	_, clone := newClone(t)
	out, errOut, code := run(t, "delete", "job", "alice.embed", "--repo", clone)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	want := "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: vllm}\nservice:\n  port: 8000\n  replicas: 2\n" +
		"---\nkind: notebook\nversion: v0.1\njob: {name: lab}\nenvironment: {image: jupyter}\n"
	if got := readFile(t, filepath.Join(clone, "teams/alice/services.yaml")); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if msg := git(t, clone, "log", "-1", "--format=%s"); msg != "gpuctl: delete compute embed (alice)" {
		t.Fatalf("commit: %s", msg)
	}
}

func TestDeleteAmbiguousName(t *testing.T) {
	_, clone := newClone(t)
	_, errOut, code := run(t, "delete", "job", "sft", "--repo", clone)
	if code != 1 || !strings.Contains(errOut, `job name "sft" is ambiguous: it is declared in alice (teams/alice/sft.yaml), bob (teams/bob/sft.yaml); name one with -n NAMESPACE`) {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	out, errOut, code := run(t, "delete", "job", "sft", "-n", "bob", "--repo", clone)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(clone, "teams/bob/sft.yaml")); !os.IsNotExist(err) {
		t.Fatal("the file of the only document is still there")
	}
	if files := git(t, clone, "show", "--name-status", "--format=", "HEAD"); files != "D\tteams/bob/sft.yaml" {
		t.Fatalf("commit holds:\n%s", files)
	}
}

func TestPauseResumeScale(t *testing.T) {
	_, clone := newClone(t)
	services := filepath.Join(clone, "teams/alice/services.yaml")
	sft := filepath.Join(clone, "teams/alice/sft.yaml")
	steps := []struct {
		args    []string
		file    string
		want    string // a substring of the file after
		subject string
	}{
		{[]string{"pause", "job", "alice.sft"}, sft, "job:\n  name: sft\n  suspend: true\nenvironment:", "gpuctl: pause training sft (alice)"},
		{[]string{"resume", "job", "sft", "-n", "alice"}, sft, "job:\n  name: sft\nenvironment:", "gpuctl: resume training sft (alice)"},
		{[]string{"pause", "job", "chat"}, services, "  port: 8000\n  replicas: 0\n  pausedReplicas: 2\n---", "gpuctl: pause inference chat (alice)"},
		{[]string{"resume", "job", "chat"}, services, "  port: 8000\n  replicas: 2\n---", "gpuctl: resume inference chat (alice)"},
		{[]string{"scale", "inference", "chat", "--replicas", "3"}, services, "  port: 8000\n  replicas: 3\n---", "gpuctl: scale inference chat to 3 (alice)"},
		{[]string{"pause", "job", "lab"}, services, "environment: {image: jupyter}\nservice:\n  replicas: 0\n  pausedReplicas: 1\n", "gpuctl: pause notebook lab (alice)"},
	}
	for _, st := range steps {
		out, errOut, code := run(t, append(st.args, "--repo", clone)...)
		if code != 0 {
			t.Fatalf("%v: exit %d:\n%s%s", st.args, code, out, errOut)
		}
		if got := readFile(t, st.file); !strings.Contains(got, st.want) {
			t.Fatalf("%v:\n%s", st.args, got)
		}
		if msg := git(t, clone, "log", "-1", "--format=%s"); msg != st.subject {
			t.Fatalf("%v: commit %q", st.args, msg)
		}
	}
	if got := readFile(t, sft); got != gitOpsFiles["teams/alice/sft.yaml"] {
		t.Fatalf("pause and resume did not give the file back:\n%s", got)
	}
	// Again: nothing to change, exit 1, no commit.
	head := git(t, clone, "rev-parse", "HEAD")
	_, errOut, code := run(t, "pause", "job", "lab", "--repo", clone)
	if code != 1 || !strings.Contains(errOut, "notebook alice.lab is already paused: nothing to change") || git(t, clone, "rev-parse", "HEAD") != head {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	_, errOut, code = run(t, "scale", "compute", "chat", "--replicas", "1", "--repo", clone)
	if code != 1 || !strings.Contains(errOut, "job alice.chat is of kind inference, not compute") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
}

func TestDryRunPrintsTheDiffAndChangesNothing(t *testing.T) {
	_, clone := newClone(t)
	head := git(t, clone, "rev-parse", "HEAD")
	out, errOut, code := run(t, "scale", "inference", "chat", "--replicas", "4", "--dry-run", "--repo", clone)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	want := "--- a/teams/alice/services.yaml\n+++ b/teams/alice/services.yaml\n@@ -4,7 +4,7 @@\n environment: {image: vllm}\n service:\n   port: 8000\n-  replicas: 2\n+  replicas: 4\n ---\n # the embedding service\n kind: compute\n"
	if out != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", out, want)
	}
	in := writeFile(t, t.TempDir(), "new.yaml", newSFT)
	out, _, code = run(t, "create", "-f", in, "--dry-run", "--repo", clone)
	if code != 0 || !strings.HasPrefix(out, "--- /dev/null\n+++ b/teams/alice/new.yaml\n@@ -0,0 +1,8 @@\n+# Qwen2 7B SFT\n") {
		t.Fatalf("exit %d, diff:\n%s", code, out)
	}
	if st := git(t, clone, "status", "--porcelain", "--untracked-files=all"); st != "" || git(t, clone, "rev-parse", "HEAD") != head {
		t.Fatalf("dry run changed the repository:\n%s", st)
	}
}

// TestRepoDefaultsToTheWorkTreeOfTheCurrentDirectory runs from a team's directory.
func TestRepoDefaultsToTheWorkTreeOfTheCurrentDirectory(t *testing.T) {
	_, clone := newClone(t)
	t.Chdir(filepath.Join(clone, "teams", "bob"))
	out, errOut, code := run(t, "pause", "job", "bob.sft")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(readFile(t, filepath.Join(clone, "teams/bob/sft.yaml")), "suspend: true") {
		t.Fatal("not paused")
	}
}

func TestPushRebasesOnceWhenTheRemoteMoved(t *testing.T) {
	rem, clone := newClone(t)
	// Another clone pushes first.
	rem.Commit("bob: a new job", map[string]string{"teams/bob/eval.yaml": "kind: training\nversion: v0.1\njob: {name: eval}\nenvironment: {image: x}\n"})
	in := writeFile(t, t.TempDir(), "qwen2-7b-sft.yaml", newSFT)
	out, errOut, code := run(t, "create", "-f", in, "--push", "--repo", clone)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	remote := git(t, rem.Bare, "log", "--format=%s", "main")
	if !strings.HasPrefix(remote, "gpuctl: create training qwen2-7b-sft (alice)\nbob: a new job\ninitial") {
		t.Fatalf("remote history:\n%s", remote)
	}
	if local, pushed := git(t, clone, "rev-parse", "HEAD"), git(t, rem.Bare, "rev-parse", "main"); local != pushed {
		t.Fatalf("pushed %s, local %s", pushed, local)
	}
	if !strings.Contains(out, "pushed ") || !strings.Contains(out, " to origin/main") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestPushConflictRestoresTheRepository(t *testing.T) {
	rem, clone := newClone(t)
	// Another clone changes the line that the pause edits next to.
	rem.Commit("alice: rename", map[string]string{"teams/alice/sft.yaml": strings.Replace(gitOpsFiles["teams/alice/sft.yaml"], "  name: sft\n", "  name: sft\n  priority: high\n", 1)})
	head := git(t, clone, "rev-parse", "HEAD")
	before := readFile(t, filepath.Join(clone, "teams/alice/sft.yaml"))
	out, errOut, code := run(t, "pause", "job", "alice.sft", "--push", "--repo", clone)
	if code != 1 || !strings.Contains(errOut, "changes teams/alice/sft.yaml too: the rebase stopped on a conflict; the repository is as it was before the command") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if now := git(t, clone, "rev-parse", "HEAD"); now != head {
		t.Fatalf("HEAD %s, was %s", now, head)
	}
	if got := readFile(t, filepath.Join(clone, "teams/alice/sft.yaml")); got != before {
		t.Fatalf("file:\n%s", got)
	}
	if st := git(t, clone, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("work tree:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(clone, ".git", "rebase-merge")); !os.IsNotExist(err) {
		t.Fatal("a rebase is still in progress")
	}
}

func TestBranchPrintsThePullRequestURL(t *testing.T) {
	rem, clone := newClone(t)
	in := writeFile(t, t.TempDir(), "qwen2-7b-sft.yaml", newSFT)
	out, errOut, code := run(t, "create", "-f", in, "--branch", "add-sft", "--push", "--repo", clone)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	// The branch is on the remote; the checkout stays on main, untouched.
	if msg := git(t, rem.Bare, "log", "-1", "--format=%s", "add-sft"); msg != "gpuctl: create training qwen2-7b-sft (alice)" {
		t.Fatalf("remote branch: %s", msg)
	}
	if b := git(t, clone, "branch", "--show-current"); b != "main" {
		t.Fatalf("checkout on %s", b)
	}
	if _, err := os.Stat(filepath.Join(clone, "teams/alice/qwen2-7b-sft.yaml")); !os.IsNotExist(err) {
		t.Fatal("the checkout changed")
	}
	if !strings.Contains(out, "on new branch add-sft (your checkout stays on main)") {
		t.Fatalf("output:\n%s", out)
	}
	// The URL of the pull request, for a GitHub and a GitLab remote.
	for remote, want := range map[string]string{
		"git@github.com:acme/gitops.git":   "open the pull request: https://github.com/acme/gitops/compare/main...add-lab?expand=1",
		"https://gitlab.com/ml/gitops.git": "open the pull request: https://gitlab.com/ml/gitops/-/merge_requests/new?merge_request%5Bsource_branch%5D=add-lab&merge_request%5Btarget_branch%5D=main",
	} {
		git(t, clone, "remote", "set-url", "origin", remote)
		out, errOut, code := run(t, "pause", "job", "lab", "--branch", "add-lab", "--repo", clone)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(errOut, "not pushed: git push -u origin add-lab") {
			t.Fatalf("%s: exit %d:\n%s%s", remote, code, out, errOut)
		}
		git(t, clone, "branch", "-D", "add-lab")
	}
}

// TestCommitHookAndTheIndex: the user's hooks run (a pre-commit hook that refuses leaves the
// files as they were); what else the index holds is not committed; a file with changes not
// committed is not edited.
func TestCommitHookAndTheIndex(t *testing.T) {
	_, clone := newClone(t)
	sft := filepath.Join(clone, "teams/alice/sft.yaml")
	hook := filepath.Join(clone, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'no commits on friday' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "pause", "job", "alice.sft", "--repo", clone)
	if code != 1 || !strings.Contains(errOut, "nothing committed, the files are as they were") || !strings.Contains(errOut, "no commits on friday") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if got := readFile(t, sft); got != gitOpsFiles["teams/alice/sft.yaml"] {
		t.Fatalf("file:\n%s", got)
	}
	if st := git(t, clone, "status", "--porcelain"); st != "" {
		t.Fatalf("work tree:\n%s", st)
	}
	os.Remove(hook)

	writeFile(t, clone, "notes.txt", "my notes\n")
	git(t, clone, "add", "notes.txt")
	if _, errOut, code := run(t, "pause", "job", "alice.sft", "--repo", clone); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if files := git(t, clone, "show", "--name-only", "--format=", "HEAD"); files != "teams/alice/sft.yaml" {
		t.Fatalf("commit holds:\n%s", files)
	}
	if st := git(t, clone, "status", "--porcelain"); st != "A  notes.txt" {
		t.Fatalf("work tree:\n%s", st)
	}

	writeFile(t, clone, "teams/alice/services.yaml", gitOpsFiles["teams/alice/services.yaml"]+"# my edit\n")
	_, errOut, code = run(t, "scale", "inference", "chat", "--replicas", "1", "--repo", clone)
	if code != 1 || !strings.Contains(errOut, "teams/alice/services.yaml: changes not committed: commit or stash them first") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
}
