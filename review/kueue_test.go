package review_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// The kueue fixture: the fixture's teams and pools with queueing kueue. alice owns 8 GPUs
// per pool and may borrow 8; bob owns 16 and lends at most 12. Each step is one commit,
// tagged with its name.
const (
	kueueConfig = fixtureConfig + "queueing: kueue\n"
	kueueQuota  = `kind: quota
version: v0.1
metadata: {name: teams}
users:
  alice:
    cpu: 256
    memory: 1Ti
    gpu: 8
    borrowingLimit: {gpu: 8}
  bob:
    cpu: 256
    memory: 1Ti
    gpu: 16
    lendingLimit: {gpu: 12}
`
)

var kueueSteps = []fixtureStep{
	{"kueue-initial", map[string]string{
		".gpuctl.yaml": kueueConfig, "pools/pools.yaml": fixturePools, "quotas/teams.yaml": kueueQuota,
		"teams/alice/sft.yaml": training("alice-sft", "training-pool", "A100-80G", 8, 1, ""),
	}},
	// alice's second job borrows bob's idle GPUs
	{"kueue-borrow", map[string]string{"teams/alice/dpo.yaml": training("alice-dpo", "training-pool", "A100-80G", 8, 1, "")}},
	// a third is over what alice may borrow: it waits
	{"kueue-over-limit", map[string]string{"teams/alice/eval.yaml": training("alice-eval", "training-pool", "A100-80G", 4, 1, "")}},
	// the admin raises alice's quota and lets bob lend all of it; bob serves in the default pool
	{"kueue-raise-quota", map[string]string{
		"quotas/teams.yaml":    strings.NewReplacer("gpu: 8\n    borrowingLimit", "gpu: 16\n    borrowingLimit", "    lendingLimit: {gpu: 12}\n", "").Replace(kueueQuota),
		"teams/bob/serve.yaml": strings.Replace(inference("bob-serve", 2, ""), "  pool: inference-pool\n", "", 1),
	}},
	// bob's job is larger than bob's queue and all the cohort can lend: never admitted
	{"kueue-too-big", map[string]string{"teams/bob/pretrain.yaml": training("bob-pretrain", "training-pool", "A100-80G", 8, 5, "")}},
}

func newKueueFixture(t testing.TB) *gittest.Remote { return fixtureRepo(t, kueueSteps) }

// TestReviewKueueSteps compares each kueue fixture commit with the one before it.
func TestReviewKueueSteps(t *testing.T) { goldenSteps(t, newKueueFixture(t), kueueSteps) }

func TestReviewKueueJSON(t *testing.T) {
	goldenJSON(t, newKueueFixture(t), "kueue-initial", "kueue-too-big", "kueue-initial-to-too-big.json")
}

// queueLine finds a team's queue line in a pool.
func queueLine(t *testing.T, rep *review.Report, team, pool string) review.QueueLine {
	t.Helper()
	for _, l := range rep.Budget.Queues {
		if l.Team == team && l.Pool == pool {
			return l
		}
	}
	t.Fatalf("no queue line %s/%s in %+v", team, pool, rep.Budget.Queues)
	return review.QueueLine{}
}

func quotaString(q *review.QueueQuota) string {
	if q == nil {
		return "none"
	}
	limit := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("%d borrow %s lend %s borrowable %d", q.Nominal, limit(q.BorrowingLimit), limit(q.LendingLimit), q.Borrowable)
}

// What each step must show, beyond the golden files: the queue lines a reviewer relies on,
// and that borrowing and waiting fail nothing while a job the queue can never admit does.
func TestReviewKueueFacts(t *testing.T) {
	r := newKueueFixture(t)
	type line struct {
		team, pool            string
		before, after         int64
		quotaBefore, quotaAft string
		state                 review.QueueState
	}
	cases := map[string]struct {
		base, head string
		lines      []line
		want       []string // in the text output
		failing    int
	}{
		"borrow": {"kueue-initial", "kueue-borrow", []line{
			{"alice", "training-pool", 8, 16, "8 borrow 8 lend - borrowable 8", "8 borrow 8 lend - borrowable 8", review.QueueBorrows},
			{"bob", "training-pool", 0, 0, "16 borrow - lend 12 borrowable 8", "16 borrow - lend 12 borrowable 8", review.QueueFits},
		}, []string{"TEAM   POOL           BEFORE  AFTER  QUEUE QUOTA  BORROWING LIMIT  LENDING LIMIT",
			"alice  training-pool  8       16     8            8                -              borrows 8 of up to 8 from the cohort (preemptible)",
			"alice  8       16     per pool"}, 0},
		"over limit waits": {"kueue-borrow", "kueue-over-limit", []line{
			{"alice", "training-pool", 16, 20, "8 borrow 8 lend - borrowable 8", "8 borrow 8 lend - borrowable 8", review.QueueOverLimit},
		}, []string{"over limit: 4 wait (quota 8 + up to 8 from the cohort)"}, 0},
		"quota and limits change": {"kueue-over-limit", "kueue-raise-quota", []line{
			{"alice", "training-pool", 20, 20, "8 borrow 8 lend - borrowable 8", "16 borrow 8 lend - borrowable 8", review.QueueBorrows},
			{"bob", "training-pool", 0, 0, "16 borrow - lend 12 borrowable 8", "16 borrow - lend - borrowable 16", review.QueueFits},
			{"bob", "default", 0, 2, "16 borrow - lend 12 borrowable 8", "16 borrow - lend - borrowable 16", review.QueueFits},
		}, []string{"bob    training-pool   0       0      16           -                12 → -",
			"alice  training-pool   20      20     8 → 16       8                -              borrows 4 of up to 8 from the cohort (preemptible)"}, 0},
		"a job no queue can admit": {"kueue-raise-quota", "kueue-too-big", []line{
			{"bob", "training-pool", 0, 40, "16 borrow - lend - borrowable 16", "16 borrow - lend - borrowable 16", review.QueueOverLimit},
		}, []string{"teams/bob/pretrain.yaml:11: error: [quota] Job bob/bob-pretrain requests 40 GPUs at once in pool training-pool, and its queue bob can admit at most 32 there (quota 16 + up to 16 borrowed from the cohort): Kueue would never admit it"}, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rep := checkFacts(t, r, tc.base, tc.head, tc.want, tc.failing)
			for _, w := range tc.lines {
				l := queueLine(t, rep, w.team, w.pool)
				got := line{l.Team, l.Pool, l.Before, l.After, quotaString(l.QuotaBefore), quotaString(l.QuotaAfter), l.State}
				if got != w {
					t.Errorf("queue line\n got %+v\nwant %+v", got, w)
				}
			}
			for _, tb := range rep.Budget.Teams {
				if tb.QuotaBefore != nil || tb.QuotaAfter != nil || !tb.Queue {
					t.Errorf("team %s: %+v, want no ResourceQuota and a queue", tb.Namespace, tb)
				}
			}
		})
	}
}
