package git

import (
	"context"
	"testing"
	"time"
)

func TestPollSignalsOnlyWhenTheRefMoves(t *testing.T) {
	const interval = 200 * time.Millisecond
	r := newTestRemote(t, nil)
	r.Commit("one", map[string]string{"a": "1"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main", Interval: interval, Jitter: 0.1})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	waitSignal(s.Changes(), 0) // a poll may have run before the first Fetch

	if waitSignal(s.Changes(), 4*interval) {
		t.Fatal("signalled although nothing was pushed")
	}
	id := r.Commit("two", map[string]string{"a": "2"})
	if !waitSignal(s.Changes(), 10*interval) {
		t.Fatal("no signal after a push")
	}
	rev, err := s.Fetch(ctx)
	if err != nil || rev.ID != id {
		t.Fatalf("Fetch after the signal = %s, %v; want %s", rev.ID, err, id)
	}
	waitSignal(s.Changes(), 0) // a poll between the push and the Fetch may have signalled
	if waitSignal(s.Changes(), 4*interval) {
		t.Error("signalled again after catching up")
	}
}

func TestPollDisabled(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("one", map[string]string{"a": "1"})
	s := newSourceT(t, Options{URL: r.URL})
	r.Commit("two", map[string]string{"a": "2"})
	if waitSignal(s.Changes(), 300*time.Millisecond) {
		t.Error("signalled with Interval 0")
	}
	s.Trigger()
	s.Trigger() // coalesced
	if !waitSignal(s.Changes(), 0) || waitSignal(s.Changes(), 0) {
		t.Error("Trigger must signal exactly once when called twice")
	}
}

func TestWaitJitter(t *testing.T) {
	s := &Source{opts: Options{Interval: time.Second, Jitter: 0.1}}
	for range 1000 {
		if w := s.wait(); w < 900*time.Millisecond || w > 1100*time.Millisecond {
			t.Fatalf("wait() = %v, want 1s ± 10%%", w)
		}
	}
	if d := DefaultOptions("u", "r"); d.Interval != DefaultInterval || d.Jitter != DefaultJitter {
		t.Errorf("DefaultOptions = %+v", d)
	}
}
