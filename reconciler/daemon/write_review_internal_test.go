package daemon

import (
	"context"
	"errors"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/sources"
)

// The tree of the write-review tests: alice and bob by the namespace rules, a quota of 16 GPUs
// for alice, and the administrator's policy of issue #30 (maxGPUsPerJob 8, one registry, no
// team with priority high). Bob's file breaks the policy already (docker.io): no write of
// alice's is refused for it.
var reviewTree = map[string]string{
	".gpuctl.yaml":       "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
	"gpuctl-policy.yaml": "version: v0.1\nmaxGPUsPerJob: 8\nallowedRegistries: [registry.example.com]\nhighPriorityTeams: []\n",
	"quotas/teams.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: teams}\nusers:\n" +
		"  alice: {cpu: 1000, memory: 4000Gi, gpu: 16}\n  bob: {cpu: 1000, memory: 4000Gi, gpu: 16}\n",
	"teams/alice/serve.yaml": "kind: inference\nversion: v0.1\njob: {name: serve}\n" +
		"environment: {image: registry.example.com/vllm:v0.6.0}\nservice: {replicas: 1, port: 8000}\n" +
		"resources: {gpu: 1, cpu: 1, memory: 1Gi}\n",
	"teams/bob/old.yaml": trainingFile("old", "docker.io/bob/trainer:v1", "", 1, 1),
}

// trainingFile is a training job of nodes × gpu GPUs.
func trainingFile(name, image, priority string, gpu, nodes int) string {
	job := "{name: " + name + "}"
	if priority != "" {
		job = "{name: " + name + ", priority: " + priority + "}"
	}
	return "kind: training\nversion: v0.1\njob: " + job + "\nenvironment:\n  image: " + image + "\n  command: [python, train.py]\n" +
		"resources: {gpu: " + strconv.Itoa(gpu) + ", node_count: " + strconv.Itoa(nodes) + ", cpu: 1, memory: 1Gi}\n"
}

// memTree is files in memory below /repo.
func memTree(t *testing.T, files map[string]string) (filesys.FileSystem, string) {
	t.Helper()
	fsys := filesys.MakeFsInMemory()
	for p, c := range files {
		abs := path.Join("/repo", p)
		if err := fsys.MkdirAll(path.Dir(abs)); err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFile(abs, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	return fsys, "/repo"
}

// committerSource is a Git source as far as Write's choice of a review is concerned.
type committerSource struct{ sources.Source }

func (committerSource) Commit(context.Context, sources.CommitOptions, sources.EditFunc) (sources.Committed, error) {
	return sources.Committed{}, errors.New("not in this test")
}

// refusedRules returns the rules of the violations that refused a write, or fails.
func refusedRules(t *testing.T, err error) []string {
	t.Helper()
	var refused *review.RefusedError
	var ee *EditError
	if !errors.As(err, &refused) || !errors.As(err, &ee) {
		t.Fatalf("want an *EditError of a *review.RefusedError, got %T %v", err, err)
	}
	var rules []string
	for _, v := range refused.Violations {
		rules = append(rules, string(v.Rule))
	}
	slices.Sort(rules)
	return slices.Compact(rules)
}

// TestWriteReview (issue #30, finding 3): a write to the branch that applies passes the checks of
// a pull request's review, with the review's messages: alice's token cannot create a 64-GPU
// job of priority high from docker.io, nor scale a service to 100,000 replicas; a write within
// the policy is made, whatever bob's files break already; a write to a new branch is left to
// its pull request's review.
func TestWriteReview(t *testing.T) {
	alice := Writer{Name: "alice-bot", Namespaces: []string{"alice"}}
	miner := edit.File{Name: "yamlContent", Target: "miner.yaml", Data: []byte(trainingFile("miner", "docker.io/evil/miner:latest", "high", 8, 8))}
	write := func(t *testing.T, d *Daemon, files map[string]string, req WriteRequest) (*edit.Result, error) {
		fsys, dir := memTree(t, files)
		req.By = alice
		return d.edit(fsys, dir, req)
	}
	d := New(Options{})

	t.Run("a 64-GPU job of priority high from docker.io", func(t *testing.T) {
		_, err := write(t, d, reviewTree, WriteRequest{Verb: VerbCreate, Files: []edit.File{miner}, Namespace: "alice"})
		got := refusedRules(t, err)
		want := []string{"allowedRegistries", "highPriorityTeams", "maxGPUsPerJob", "quota"}
		if !slices.Equal(got, want) {
			t.Fatalf("rules %v, want %v: %v", got, want, err)
		}
		for _, s := range []string{
			"teams/alice/miner.yaml:", "[maxGPUsPerJob] Job alice/miner requests 64 GPUs in all (pods × GPUs per pod), above the limit of 8",
			"image docker.io/evil/miner:latest is not from an allowed registry (registry.example.com)",
			"[highPriorityTeams]", "team alice requests 65 GPUs, above its quota of 16",
		} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("the error does not say %q:\n%v", s, err)
			}
		}
		if strings.Contains(err.Error(), "teams/bob/") {
			t.Errorf("bob's violations, which the write does not bring, refuse it:\n%v", err)
		}
	})

	t.Run("a service scaled to 100,000 replicas", func(t *testing.T) {
		_, err := write(t, d, reviewTree, WriteRequest{Verb: VerbScale, Job: edit.JobRef{Namespace: "alice", Name: "serve"}, Replicas: 100000})
		if got := refusedRules(t, err); !slices.Contains(got, "maxGPUsPerJob") || !slices.Contains(got, "quota") {
			t.Fatalf("rules %v, want maxGPUsPerJob and quota: %v", got, err)
		}
		if !strings.Contains(err.Error(), "requests 100000 GPUs in all") {
			t.Errorf("error: %v", err)
		}
	})

	t.Run("a write within the policy", func(t *testing.T) {
		good := edit.File{Name: "yamlContent", Target: "sft.yaml", Data: []byte(trainingFile("sft", "registry.example.com/train:v1", "", 4, 2))}
		res, err := write(t, d, reviewTree, WriteRequest{Verb: VerbCreate, Files: []edit.File{good}, Namespace: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Workloads) != 1 || res.Workloads[0].ID() != "alice.sft" {
			t.Errorf("workloads %+v", res.Workloads)
		}
		if _, err := write(t, d, reviewTree, WriteRequest{Verb: VerbScale, Job: edit.JobRef{Namespace: "alice", Name: "serve"}, Replicas: 8}); err != nil {
			t.Errorf("scale to 8: %v", err)
		}
	})

	t.Run("another team's broken file hides nothing", func(t *testing.T) {
		broken := maps.Clone(reviewTree)
		broken["teams/bob/typo.yaml"] = "kind: training\nversion: v0.1\njob: {name: typo}\nresources: {gpu: 1, cpuz: 1}\n"
		_, err := write(t, d, broken, WriteRequest{Verb: VerbCreate, Files: []edit.File{miner}, Namespace: "alice"})
		if got := refusedRules(t, err); !slices.Contains(got, "maxGPUsPerJob") {
			t.Fatalf("rules %v: %v", got, err)
		}
	})

	t.Run("to a new branch: the pull request reviews it", func(t *testing.T) {
		d := New(Options{Source: committerSource{}, Writes: WriteOptions{Push: true, BranchPrefix: "gpuctl/"}})
		res, err := write(t, d, reviewTree, WriteRequest{Verb: VerbCreate, Files: []edit.File{miner}, Namespace: "alice"})
		if err != nil || len(res.Workloads) != 1 {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

// TestWriteNamesItsObjectsAndNeedsAQuota (issue #30, finding 5): a plain manifest created
// through the API is named in the commit's subject, as a job is; and a token that is not an
// admin (namespaces=* included) creates no job in a namespace that no quota names, while the
// tree has quotas: it would run unqueued and unlimited.
func TestWriteNamesItsObjectsAndNeedsAQuota(t *testing.T) {
	d := New(Options{})
	fsys, dir := memTree(t, reviewTree)
	cm := edit.File{Name: "yamlContent", Target: "settings.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n")}
	res, err := d.edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: Writer{Name: "alice-bot", Namespaces: []string{"alice"}}, Files: []edit.File{cm}})
	if err != nil {
		t.Fatal(err)
	}
	want := []edit.Workload{{Kind: "ConfigMap", Name: "settings", Namespace: "alice", File: "teams/alice/settings.yaml"}}
	if !slices.Equal(res.Objects, want) {
		t.Errorf("objects %+v, want %+v", res.Objects, want)
	}
	if msg := res.CommitMessage("alice-bot"); msg != "gpuctl: create ConfigMap settings (alice-bot)\n\nalice.settings: teams/alice/settings.yaml\n" {
		t.Errorf("commit message %q", msg)
	}

	job := edit.File{Name: "yamlContent", Target: "sft.yaml", Data: []byte(trainingFile("sft", "registry.example.com/train:v1", "", 1, 1))}
	all := Writer{Name: "dashboard", AllNamespaces: true}
	_, err = d.edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: all, Files: []edit.File{job}, Namespace: "carol"})
	var fe *ForbiddenError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), `no quota names namespace "carol" (the quota files name alice, bob)`) {
		t.Errorf("a namespaces=* token's job in a namespace without a quota: %v", err)
	}
	if _, err := d.edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: all, Files: []edit.File{job}, Namespace: "alice"}); err != nil {
		t.Errorf("a namespaces=* token's job in alice's namespace: %v", err)
	}
	if _, err := d.edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: Writer{Name: "ops", Admin: true}, Files: []edit.File{job}, Namespace: "carol"}); err != nil {
		t.Errorf("an admin's job in a namespace without a quota: %v", err)
	}
}
