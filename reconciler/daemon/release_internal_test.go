package daemon

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

var sink [][]byte

// allocate allocates about n bytes on the heap, left as garbage.
func allocate(n int) {
	for range n >> 20 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
}

// A sync that allocated releaseAfter or more since the last release starts one; a no-op's few
// allocations do not; one release runs at a time.
func TestReleaseAfterLargeSyncs(t *testing.T) {
	released := make(chan struct{})
	block := make(chan struct{})
	r := &releaser{collect: func() { <-block; released <- struct{}{} }}
	r.mark.Store(heapAllocated())
	if r.afterSync() {
		t.Fatal("released after a sync that allocated nothing")
	}
	allocate(releaseAfter + 1<<20)
	if !r.afterSync() {
		t.Fatal("no release after a sync that allocated more than releaseAfter")
	}
	allocate(releaseAfter + 1<<20)
	if r.afterSync() {
		t.Fatal("a second release started while the first runs")
	}
	close(block)
	<-released
	for r.running.Load() {
		time.Sleep(time.Millisecond)
	}
	// What was allocated while the first ran counts for the next one.
	if !r.afterSync() {
		t.Fatal("no release after a large sync during the last release")
	}
	<-released
	for r.running.Load() {
		time.Sleep(time.Millisecond)
	}
	if r.afterSync() {
		t.Fatal("released again without allocating since the last release began")
	}
}

// The collection sets the heap's next goal from what stays live: after 64 MiB that a sync
// held and dropped, the goal falls by about twice that (measured with the runtime's own
// counters).
func TestReleaseLowersTheHeapGoal(t *testing.T) {
	goal := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	r := newReleaser()
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.GC() // a collection in the middle of the sync: the 64 MiB are live
	during := goal()
	runtime.KeepAlive(keep)
	keep = nil
	if !r.afterSync() {
		t.Fatal("no collection after 64 MiB")
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.running.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// Other tests of the package may hold memory too: the goal must fall by about twice what
	// was dropped.
	if after := goal(); during < 128<<20 || after > during-96<<20 {
		t.Fatalf("heap goal %d MiB during the sync, %d MiB after the collection; want at least 128, then 96 less", during>>20, after>>20)
	}
}
