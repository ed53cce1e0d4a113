package edit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/render"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const newJob = "# my first job\nkind: training\nversion: v0.1\njob:\n  name: qwen2-7b-sft\nenvironment:\n  image: \"llama-factory:v0.8\"   # pinned\n"

func existing() map[string]string {
	return map[string]string{
		".gpuctl.yaml":           teamConfig,
		"teams/alice/chat.yaml":  "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice: {port: 80}\n",
		"teams/bob/sft.yaml":     "kind: training\nversion: v0.1\njob: {name: qwen2-7b-sft}\nenvironment: {image: x}\n",
		"teams/alice/kustom.txt": "not yaml",
	}
}

func TestCreate(t *testing.T) {
	cases := map[string]struct {
		file  edit.File
		opts  edit.CreateOptions
		path  string
		extra map[string]string
	}{
		"by team":                         {file: edit.File{Name: "sft.yaml", Data: []byte(newJob)}, opts: edit.CreateOptions{Team: "alice"}, path: "teams/alice/sft.yaml"},
		"team with no directory yet":      {file: edit.File{Name: "sft.yaml", Data: []byte(newJob)}, opts: edit.CreateOptions{Team: "carol"}, path: "teams/carol/sft.yaml"},
		"by path":                         {file: edit.File{Name: "sft.yml", Data: []byte(newJob)}, opts: edit.CreateOptions{Path: "jobs/nightly/"}, path: "jobs/nightly/sft.yml"},
		"path is the root":                {file: edit.File{Name: "sft.yaml", Data: []byte(newJob)}, opts: edit.CreateOptions{Path: "."}, path: "sft.yaml"},
		"path wins over team":             {file: edit.File{Name: "sft.yaml", Data: []byte(newJob)}, opts: edit.CreateOptions{Team: "bob", Path: "teams/alice"}, path: "teams/alice/sft.yaml"},
		"standard input named by its job": {file: edit.File{Name: "-", Data: []byte(newJob)}, opts: edit.CreateOptions{Team: "alice"}, path: "teams/alice/qwen2-7b-sft.yaml"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := memRepo(t, existing())
			res, err := r.Create([]edit.File{c.file}, c.opts)
			ch := oneChange(t)(res, err)
			if ch.Path != c.path || ch.Action != edit.Created || string(ch.New) != newJob || ch.Old != nil {
				t.Fatalf("%s %s:\n%s", ch.Action, ch.Path, ch.New)
			}
			if len(res.Workloads) != 1 || res.Workloads[0].Name != "qwen2-7b-sft" || res.Workloads[0].Kind != "training" {
				t.Fatalf("workloads %+v", res.Workloads)
			}
			if err := edit.Apply(r.FS, r.Root, res.Changes); err != nil {
				t.Fatal(err)
			}
			data, err := r.FS.ReadFile(filepath.Join("/repo", c.path))
			if err != nil || string(data) != newJob {
				t.Fatalf("applied: %q %v", data, err)
			}
		})
	}
}

func TestCreateRefusals(t *testing.T) {
	other := func(ns string) string {
		return "kind: compute\nversion: v0.1\njob:\n  name: web\n  namespace: " + ns + "\nenvironment: {image: x}\n"
	}
	cases := map[string]struct {
		files []edit.File
		opts  edit.CreateOptions
		check func(error) bool
		msg   string
	}{
		"name exists in the namespace": {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "bob"},
			check: is[*edit.NameExistsError], msg: `x.yaml: training "qwen2-7b-sft" already exists in namespace "bob" (teams/bob/sft.yaml)`},
		"file exists": {files: []edit.File{{Name: "chat.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "alice"},
			check: is[*edit.FileExistsError], msg: "teams/alice/chat.yaml exists"},
		"invalid YAML with its line": {files: []edit.File{{Name: "job.yaml", Data: []byte("kind: training\nversion: v0.1\njob:\n  name: x\n\tpriority: high\n")}}, opts: edit.CreateOptions{Team: "alice"},
			check: is[*render.ValidationError], msg: "job.yaml:4: invalid YAML: found a tab character"},
		"every error of every file": {files: []edit.File{{Name: "a.yaml", Data: []byte("kind: training\nversion: v0.1\njob: {name: A}\n")}, {Name: "b.yaml", Data: []byte("kind: trainning\nversion: v0.1\n")}}, opts: edit.CreateOptions{Team: "alice"},
			check: is[*render.ValidationError], msg: "3 errors:\na.yaml:1:1: environment: required field is missing\na.yaml:3:13: job.name: \"A\" is not a valid name"},
		"another team's namespace under a mapped directory": {files: []edit.File{{Name: "web.yaml", Data: []byte(other("bob"))}}, opts: edit.CreateOptions{Team: "alice"},
			check: is[*render.ValidationError], msg: `web.yaml:5:14: job.namespace: files in teams/alice/ belong to namespace "alice" and cannot place jobs in "bob"`},
		"a pool in a team directory": {files: []edit.File{{Name: "p.yaml", Data: []byte("kind: pool\nversion: v0.1\nmetadata: {name: mine}\n")}}, opts: edit.CreateOptions{Team: "alice"},
			check: is[*render.ValidationError], msg: "p.yaml:1:7: kind: pool documents are cluster-wide and cannot live in a team directory (teams/alice/)"},
		"path with ..":         {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Path: "teams/../../etc"}, check: is[*edit.PathError], msg: `a ".." segment`},
		".GIT directory":       {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Path: "teams/alice/.GIT"}, check: is[*edit.PathError], msg: `path "teams/alice/.GIT": ".GIT" is .git to Git`},
		".git. directory":      {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Path: "teams/alice/.git."}, check: is[*edit.PathError], msg: `".git." is .git to Git`},
		"GIT~1 directory":      {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Path: "teams/alice/GIT~1"}, check: is[*edit.PathError], msg: `"GIT~1" is .git to Git`},
		"HFS+ .git directory":  {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Path: "teams/alice/.g\u200cit"}, check: is[*edit.PathError], msg: "is .git to Git"},
		"a dot directory":      {files: []edit.File{{Name: "cm.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Path: "teams/alice/.x"}, check: is[*edit.PathError], msg: `".x" starts with a dot: gpuctl reads no dot directory`},
		"absolute path":        {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Path: "/etc"}, check: is[*edit.PathError], msg: `path "/etc": must be relative to the repository`},
		"file name with ..":    {files: []edit.File{{Name: "../x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "alice"}, check: is[*edit.PathError], msg: "may not hold a directory"},
		"absolute file name":   {files: []edit.File{{Name: "/tmp/x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "alice"}, check: is[*edit.PathError], msg: "may not hold a directory"},
		"not a yaml file name": {files: []edit.File{{Name: "job.txt", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "alice"}, check: is[*edit.PathError], msg: "name it *.yaml"},
		"a dotfile":            {files: []edit.File{{Name: ".gpuctl.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "alice"}, check: is[*edit.PathError], msg: "does not read a file of this name"},
		"no team, no path":     {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, check: is[*edit.NoTeamDirError], msg: "give --team or --path"},
		"reserved team":        {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "kube-system"}, check: is[*edit.NoTeamDirError], msg: `gives team "kube-system" a directory`},
		"team that is a path":  {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "../bob"}, msg: `team "../bob" is not a namespace name`},
		"two files, one place": {files: []edit.File{{Name: "x.yaml", Data: []byte(newJob)}, {Name: "x.yaml", Data: []byte(newJob)}}, opts: edit.CreateOptions{Team: "alice"}, check: is[*edit.PathError], msg: "two of the files would be written there"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := memRepo(t, existing()).Create(c.files, c.opts)
			if err == nil || (c.check != nil && !c.check(err)) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %T %v\nwant %s", err, err, c.msg)
			}
		})
	}
}

// TestCreateTeamPlacement: a team is placed only where the namespace rules map to it, even
// when its name is that of another team's directory pattern.
func TestCreateTeamPlacement(t *testing.T) {
	files := existing()
	files[".gpuctl.yaml"] = "namespaces:\n  - path: teams/ops/**\n    namespace: platform\n  - path: teams/*/**\n    namespace: $1\n"
	r := memRepo(t, files)
	// teams/ops/ is platform's: team "ops" has no directory.
	if _, err := r.Create([]edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, edit.CreateOptions{Team: "ops"}); !is[*edit.NoTeamDirError](err) {
		t.Fatalf("ops: %v", err)
	}
	ch := oneChange(t)(r.Create([]edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, edit.CreateOptions{Team: "platform"}))
	if ch.Path != "teams/ops/x.yaml" {
		t.Fatalf("platform: %s", ch.Path)
	}
}

// TestCreateSymlinks: on disk, a directory that is a symbolic link out of the repository is
// refused, as is a dangling link in the file's place.
func TestCreateSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for name, content := range existing() {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "teams", "carol")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "x.yaml"), filepath.Join(root, "teams", "alice", "x.yaml")); err != nil {
		t.Fatal(err)
	}
	r, err := edit.Open(filesys.MakeFsOnDisk(), root)
	if err != nil {
		t.Fatal(err)
	}
	for team, want := range map[string]string{
		"carol": `path "teams/carol/x.yaml": leaves the repository through a symbolic link (teams/carol)`,
		"alice": `path "teams/alice/x.yaml": is a symbolic link`,
	} {
		_, err := r.Create([]edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, edit.CreateOptions{Team: team})
		if !is[*edit.PathError](err) || err.Error() != want {
			t.Errorf("%s: got %v\nwant %s", team, err, want)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "gone"), filepath.Join(root, "teams", "dan")); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		"teams/carol":     `path "teams/carol": leaves the repository through a symbolic link (teams/carol)`,
		"teams/carol/sub": `path "teams/carol/sub": leaves the repository through a symbolic link (teams/carol)`,
		"teams/dan/sub":   `path "teams/dan/sub": goes through a symbolic link (teams/dan)`,
	} {
		_, err := r.Create([]edit.File{{Name: "x.yaml", Data: []byte(newJob)}}, edit.CreateOptions{Path: dir})
		if !is[*edit.PathError](err) || err.Error() != want {
			t.Errorf("--path %s: got %v\nwant %s", dir, err, want)
		}
	}
	// Apply checks again: a change made up elsewhere cannot write through the link either.
	err = edit.Apply(r.FS, r.Root, []edit.Change{{Path: "teams/carol/x.yaml", Action: edit.Created, New: []byte(newJob)}})
	if !is[*edit.PathError](err) {
		t.Fatalf("apply: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the repository: %v", entries)
	}
}

// TestEditBesideAnyFileName: a file whose name Git takes but kyaml's in-memory filesystem
// refuses (spaces, parentheses, unicode) stops no edit, on disk (the CLI) or in memory (the
// daemon's writes), and a kustomization that reads such a file renders.
func TestEditBesideAnyFileName(t *testing.T) {
	files := existing()
	files["teams/bob/notes (old).md"] = "old notes\n"
	files["teams/bob/résumé ✓.txt"] = "x\n"
	files["teams/bob/app (v2)/kustomization.yaml"] = "configMapGenerator:\n- name: notes\n  files:\n  - notes.md=../notes (old).md\n"
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	disk, err := edit.Open(filesys.MakeFsOnDisk(), root)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*edit.Repo{"on disk": disk, "in memory": memRepo(t, files)} {
		res, err := r.Create([]edit.File{{Name: "sft.yaml", Data: []byte(newJob)}}, edit.CreateOptions{Team: "alice"})
		if err != nil {
			t.Fatalf("%s: create: %v", name, err)
		}
		if len(res.Workloads) != 1 || res.Workloads[0].File != "teams/alice/sft.yaml" {
			t.Errorf("%s: created %+v", name, res.Workloads)
		}
		if _, err := r.Pause(edit.JobRef{Namespace: "bob", Name: "qwen2-7b-sft"}); err != nil {
			t.Errorf("%s: pause: %v", name, err)
		}
	}
}
