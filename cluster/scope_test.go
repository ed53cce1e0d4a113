package cluster

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scopedFixture is the fixture cluster with a job "dup" in alice and bob, and an event of a
// pod of each team.
func scopedFixture(t *testing.T) *Reader {
	t.Helper()
	event := func(ns, name, pod string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: "Normal", Reason: "Started",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod}, LastTimestamp: *fx.At(0)}
	}
	objs := append(fx.Objects(),
		fx.Job("alice", "dup", "training-pool", 1, batchv1.JobStatus{}),
		fx.Job("bob", "dup", "training-pool", 1, batchv1.JobStatus{}),
		event("alice", "e1", "sft-abcde"), event("bob", "e2", "llm-1"))
	return testReader(t, objs...)
}

// A team's view: only its jobs, quotas and events; another team's job is unknown exactly as a
// job that does not exist, whichever way it is named.
func TestScopedHidesOtherNamespaces(t *testing.T) {
	r := scopedFixture(t)
	alice := Scope(r, []string{"alice"})

	list, err := alice.Jobs(ctx, JobFilter{Page: Page{Number: 2, Size: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if list.Total != 4 || list.Page != 2 || list.PageSize != 2 || len(list.Items) != 2 || list.Items[0].JobID != "alice.old" {
		t.Errorf("alice's page 2: %+v", list)
	}
	all, _ := alice.Jobs(ctx, JobFilter{})
	for _, j := range all.Items {
		if j.Namespace != "alice" {
			t.Errorf("alice sees %s", j.JobID)
		}
	}
	if byStatus, _ := alice.Jobs(ctx, JobFilter{Status: "failed"}); byStatus.Total != 0 || len(byStatus.Items) != 0 {
		t.Errorf("alice's failed jobs (bob has one): %+v", byStatus)
	}
	if _, err := alice.Jobs(ctx, JobFilter{Status: "bogus"}); !errors.As(err, new(*FilterError)) {
		t.Errorf("a bad filter: %v", err)
	}

	for _, id := range []string{"bob.llm", "llm", "bob.nothing", "nothing"} {
		_, errJob := alice.Job(ctx, id)
		_, errEvents := alice.JobEvents(ctx, id)
		errLogs := alice.Logs(ctx, id, DefaultLogOptions(), func(LogLine) error { return nil })
		for what, err := range map[string]error{"job": errJob, "events": errEvents, "logs": errLogs} {
			wantNotFound(t, err, "job", id)
			if err.Error() != `unknown job "`+id+`"` {
				t.Errorf("%s %s: %v", what, id, err)
			}
		}
	}
	// A bare name two teams have is alice's, with no word of bob's.
	if d, err := alice.Job(ctx, "dup"); err != nil || d.JobID != "alice.dup" {
		t.Errorf("dup: %+v %v", d.JobID, err)
	}
	if _, err := r.Job(ctx, "dup"); !errors.As(err, new(*AmbiguousError)) {
		t.Errorf("the whole model: %v, want ambiguous", err)
	}
	both := Scope(r, []string{"bob", "alice"})
	var amb *AmbiguousError
	if _, err := both.Job(ctx, "dup"); !errors.As(err, &amb) || !reflect.DeepEqual(amb.IDs, []string{"alice.dup", "bob.dup"}) {
		t.Errorf("two teams' dup: %v", err)
	}

	quotas, _ := alice.Quotas(ctx)
	if len(quotas.Items) != 1 || quotas.Items[0].User != "alice" {
		t.Errorf("alice's quotas: %+v", quotas)
	}
	_, errBob := alice.Quota(ctx, "bob")
	_, errNobody := r.Quota(ctx, "nobody")
	if errBob == nil || errBob.Error() != `unknown user "bob": no gpuctl quota in namespace "bob"` || errNobody == nil {
		t.Errorf("bob's quota for alice: %v (no quota: %v)", errBob, errNobody)
	}
	if q, err := alice.Quota(ctx, "alice"); err != nil || q.User != "alice" {
		t.Errorf("alice's quota: %+v %v", q, err)
	}

	for ns, want := range map[string]int{"": 1, "alice": 1, "bob": 0} {
		ev, err := alice.Events(ctx, ns)
		if err != nil || len(ev.Items) != want || ev.Items == nil {
			t.Errorf("alice's events of %q: %+v %v, want %d", ns, ev, err, want)
		}
		for _, e := range ev.Items {
			if e.Namespace != "alice" {
				t.Errorf("alice sees the event %+v", e)
			}
		}
	}
	if ev, _ := both.Events(ctx, ""); len(ev.Items) != 2 {
		t.Errorf("two teams' events: %+v", ev)
	}
	none := Scope(r, nil)
	if l, _ := none.Jobs(ctx, JobFilter{}); l.Total != 0 || l.Items == nil {
		t.Errorf("no namespace: %+v", l)
	}
	if ev, _ := none.Events(ctx, ""); ev.Items == nil || len(ev.Items) != 0 {
		t.Errorf("no namespace's events: %+v", ev)
	}
}

// Pools and nodes are shared: the same for every team, except the jobs of a pool.
func TestScopedSharesPoolsAndNodes(t *testing.T) {
	r := scopedFixture(t)
	bob := Scope(r, []string{"bob"})
	wantPools, _ := r.Pools(ctx)
	if got, err := bob.Pools(ctx); err != nil || !reflect.DeepEqual(got, wantPools) {
		t.Errorf("pools: %+v %v", got, err)
	}
	wantNodes, _ := r.Nodes(ctx, NodeFilter{})
	if got, err := bob.Nodes(ctx, NodeFilter{}); err != nil || !reflect.DeepEqual(got, wantNodes) {
		t.Errorf("nodes: %+v %v", got, err)
	}
	if got, err := bob.Node(ctx, "gpu-1"); err != nil || got.NodeName != "gpu-1" {
		t.Errorf("node: %+v %v", got, err)
	}
	whole, _ := r.Pool(ctx, "training-pool")
	p, err := bob.Pool(ctx, "training-pool")
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Jobs) < 2 || len(p.Jobs) != 1 || p.Jobs[0].JobID != "bob.dup" || p.GPUUsed != whole.GPUUsed {
		t.Errorf("bob's training-pool: %+v (whole: %+v)", p, whole)
	}
}

// A team's watch of another team's namespace shows no row and lasts, as any watch, until its
// context ends.
func TestScopedWatchOfAnotherNamespace(t *testing.T) {
	alice := Scope(scopedFixture(t), []string{"alice"})
	start := time.Now() // before the deadline is set: it may fire a little before 200 ms after a later start
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	var lists []JobPodList
	err := alice.WatchJobPods(wctx, JobPodFilter{Namespace: "bob"}, func(l JobPodList) error { lists = append(lists, l); return nil })
	if err != nil || len(lists) != 1 || len(lists[0].Items) != 0 || time.Since(start) < 200*time.Millisecond {
		t.Errorf("alice watches bob: %v after %s, %+v", err, time.Since(start), lists)
	}
}
