package notify_test

import (
	"testing"

	"github.com/gpuctl/gpuctl/notify"
)

// TestRecorder: Events returns everything sent, in order, as a copy; Take what was sent since
// the last Take.
func TestRecorder(t *testing.T) {
	var r notify.Recorder
	r.Send(notify.Event{Key: "a"})
	r.Send(notify.Event{Key: "b"})
	if got := r.Take(); len(got) != 2 || got[0].Key != "a" || got[1].Key != "b" {
		t.Fatalf("first Take: %+v", got)
	}
	r.Send(notify.Event{Key: "c"})
	if got := r.Take(); len(got) != 1 || got[0].Key != "c" {
		t.Fatalf("second Take: %+v", got)
	}
	all := r.Events()
	all[0].Key = "changed"
	if got := r.Events(); len(got) != 3 || got[0].Key != "a" || got[2].Key != "c" {
		t.Fatalf("Events: %+v", got)
	}
}
