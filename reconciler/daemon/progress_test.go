package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/sources/local"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"k8s.io/client-go/kubernetes"
)

// stepClock is a fake clock that moves one second each time it is read: a sync of many
// objects lasts many seconds without sleeping.
type stepClock struct {
	mu    sync.Mutex
	t     time.Time
	reads int
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t, c.reads = c.t.Add(time.Second), c.reads+1
	return c.t
}

// TestFirstSyncLogsProgress: the first sync of 40 objects, on a clock that makes it last
// longer than ProgressEvery, logs "sync progress" lines with phase and done/total, at most one
// every ProgressEvery of that clock.
func TestFirstSyncLogsProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for i := range 40 {
		name := fmt.Sprintf("p%02d", i)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(compute(name, "default", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testcluster.Current().RESTConfig()
	opts := reconciler.DefaultOptions()
	opts.Namespace, opts.MaxPrune = "sys-progress", 1
	engine, err := reconciler.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	src, err := local.New(local.Options{Root: dir, Debounce: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var logs bytes.Buffer
	clock := &stepClock{t: time.Unix(0, 0)}
	every := 5 * time.Second
	d := daemon.New(daemon.Options{Source: src, Engine: engine, Identity: "progress", Interval: time.Hour,
		Store:         daemon.NewStore(kubernetes.NewForConfigOrDie(cfg), "sys-progress"),
		Render:        render.Options{},
		ProgressEvery: every, Now: clock.now, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if st := d.SyncOnce(ctx, ""); st.Result != daemon.ResultSucceeded {
		t.Fatalf("sync: %+v", st)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "sync progress" {
			lines = append(lines, m)
		}
	}
	clock.mu.Lock()
	reads := clock.reads
	clock.mu.Unlock()
	// Each read moves the clock 1 s: reads seconds passed, so at most reads/5 lines.
	if len(lines) == 0 || len(lines) > reads/int(every/time.Second) {
		t.Fatalf("%d progress lines over %d s of the clock (one every %s at most, at least one):\n%s", len(lines), reads, every, logs.String())
	}
	phases := map[string]bool{}
	for _, m := range lines {
		done, _ := m["done"].(float64)
		total, _ := m["total"].(float64)
		phase, _ := m["phase"].(string)
		if phase == "" || total < 1 || done < 1 || done > total {
			t.Errorf("progress line without phase and done/total: %v", m)
		}
		phases[phase] = true
	}
	if !phases[string(reconciler.PhaseApply)] {
		t.Errorf("no progress line of the apply: %v", phases)
	}
}
