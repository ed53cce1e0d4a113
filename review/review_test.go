package review_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/test/gittest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./review/ -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./review/ -update rewrites it):\n--- got\n%s", name, got)
	}
}

// TestReviewFixtureSteps compares each fixture commit with the one before it.
func TestReviewFixtureSteps(t *testing.T) { goldenSteps(t, newFixture(t), fixtureSteps) }

// goldenSteps compares each commit of steps with the one before it, in text and markdown,
// with the golden files named after the step.
func goldenSteps(t *testing.T, r *gittest.Remote, steps []fixtureStep) {
	for i, s := range steps[1:] {
		t.Run(s.tag, func(t *testing.T) {
			rep, err := review.Run(review.Options{Dir: r.Work, Base: steps[i].tag, Head: s.tag})
			if err != nil {
				t.Fatal(err)
			}
			scrubCommits(rep)
			var text, md bytes.Buffer
			if err := review.WriteText(&text, rep, review.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := review.WriteMarkdown(&md, rep, review.MarkdownOptions{}); err != nil {
				t.Fatal(err)
			}
			golden(t, s.tag+".txt", text.String())
			golden(t, s.tag+".md", md.String())
		})
	}
}

// scrubCommits drops the commit hashes, which change with every run of the test.
func scrubCommits(rep *review.Report) {
	rep.Base.Commit, rep.Head.Commit = "", ""
}

func TestReviewFixtureJSON(t *testing.T) {
	goldenJSON(t, newFixture(t), "initial", "exceed-quota", "initial-to-exceed-quota.json")
}

// goldenJSON compares base with head in JSON with the golden file name.
func goldenJSON(t *testing.T, r *gittest.Remote, base, head, name string) {
	rep, err := review.Run(review.Options{Dir: r.Work, Base: base, Head: head})
	if err != nil {
		t.Fatal(err)
	}
	scrubCommits(rep)
	var out bytes.Buffer
	if err := review.WriteJSON(&out, rep); err != nil {
		t.Fatal(err)
	}
	golden(t, name, out.String())
}

// What each step must show, beyond the golden files: the facts a reviewer relies on.
func TestReviewFixtureFacts(t *testing.T) {
	r := newFixture(t)
	cases := map[string]struct {
		base, head string
		want       []string // in the text output
		failing    int
	}{
		"add a job":            {"initial", "add-job", []string{"+ added Job alice/alice-sft (teams/alice/sft.yaml) · GPUs 0 → 2", "alice      training-pool   a100-80g  0       2      +2"}, 0},
		"raise replicas":       {"add-job", "raise-replicas", []string{"- spec.replicas: 1", "+ spec.replicas: 3", "GPUs 1 → 3"}, 0},
		"move to another pool": {"raise-replicas", "move-pool", []string{"alice      inference-pool  h100-80g  0       2      +2", "alice      training-pool   a100-80g  2       0      -2"}, 0},
		"exceed a quota": {"move-pool", "exceed-quota", []string{
			"teams/alice/pretrain.yaml:11: error: [quota] team alice requests 18 GPUs, above its quota of 8 (set at quotas/teams.yaml:8); Job alice/alice-pretrain raises it by 16"}, 1},
		"escape a namespace": {"exceed-quota", "escape-namespace", []string{
			`teams/bob/sneaky.yaml:5: error: [render] job.namespace: files in teams/bob/ belong to namespace "bob" and cannot place jobs in "alice"`,
			"quota] team alice requests 18 GPUs, above its quota of 8 (already in base)"}, 1},
		"delete a file": {"escape-namespace", "delete-file", []string{"- removed Deployment bob/bob-serve (teams/bob/serve.yaml) · GPUs 3 → 0"}, 0},
		"policy limits": {"delete-file", "policy-limits", []string{
			"teams/bob/rogue.yaml:5: error: [highPriorityTeams] Job bob/bob-rogue: priority class gpuctl-high is reserved for alice; namespace bob may use gpuctl-medium or gpuctl-low",
			"teams/bob/rogue.yaml:7: error: [allowedRegistries] Job bob/bob-rogue: image ghcr.io/rogue/trainer:latest is not from an allowed registry",
			"teams/bob/rogue.yaml:10: error: [pool] pool gpu-pool is not defined by any pool file (pools: inference-pool, training-pool)",
			"teams/bob/rogue.yaml:11: error: [maxGPUsPerJob] Job bob/bob-rogue requests 18 GPUs in all",
			"[quota] team bob requests 18 GPUs, above its quota of 4"}, 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { checkFacts(t, r, tc.base, tc.head, tc.want, tc.failing) })
	}
}

// checkFacts compares base with head and checks that the text output holds each of want and
// that failing violations fail the review; it returns the report.
func checkFacts(t *testing.T, r *gittest.Remote, base, head string, want []string, failing int) *review.Report {
	t.Helper()
	rep, err := review.Run(review.Options{Dir: r.Work, Base: base, Head: head})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_ = review.WriteText(&out, rep, review.TextOptions{})
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	if n := len(rep.Failing()); n != failing {
		t.Errorf("%d failing violations, want %d:\n%s", n, failing, out.String())
	}
	return rep
}
