package detector

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestFailedReportWritesBackOff (issue 32): while the drift ConfigMap cannot be written (the API
// server unreachable), the detector writes the report again after 1 s, then 2 s, 4 s, … up to
// 30 s, each failure logged once. Before, it tried four times a second with a warning each: 132
// lines in an outage of 8 s. Once the write succeeds, it says so and the report is stored.
func TestFailedReportWritesBackOff(t *testing.T) {
	kube := fake.NewClientset()
	var down atomic.Bool
	var failed atomic.Int64
	down.Store(true)
	kube.PrependReactor("*", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			failed.Add(1)
			return true, nil, errors.New("dial tcp 10.96.0.1:443: connect: connection refused")
		}
		return false, nil, nil
	})
	var logs bytes.Buffer
	d := &Detector{opts: Options{Store: drift.NewStore(kube, "gpuctl-system"), Log: slog.New(slog.NewTextHandler(&logs, nil))},
		items: map[string]drift.Item{}, desired: &desiredState{revision: "r1"}, dirty: true}
	d.cond = sync.NewCond(&d.mu)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); d.flushLoop(ctx) }()
	defer func() { cancel(); <-done }()

	time.Sleep(3500 * time.Millisecond) // writes at 0.25 s, 1.25 s and 3.25 s
	if n := failed.Load(); n < 2 || n > 4 {
		t.Errorf("%d writes of the report in 3.5 s of outage; want 3 (after 1 s, then 2 s)", n)
	}
	down.Store(false)
	deadline := time.Now().Add(6 * time.Second) // the next write is 4 s after the last
	for {
		d.mu.Lock()
		stored := !d.dirty && d.flushFailed == 0
		d.mu.Unlock()
		if stored {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the report was not stored within 6 s of the API server's return")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	if _, _, err := d.opts.Store.Read(t.Context()); err != nil {
		t.Errorf("the report after the outage: %v", err)
	}
	text := logs.String()
	if warnings := strings.Count(text, `msg="drift: store the report"`); int64(warnings) != failed.Load() {
		t.Errorf("%d warnings for %d failed writes:\n%s", warnings, failed.Load(), text)
	}
	if !strings.Contains(text, `msg="drift: the report is stored again"`) {
		t.Errorf("no line says the report is stored again:\n%s", text)
	}
}
