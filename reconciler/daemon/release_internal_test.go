package daemon

import (
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

// A sync that allocated ReleaseAfter or more since the last release starts one; a no-op's few
// allocations do not; one release runs at a time.
func TestReleaseAfterLargeSyncs(t *testing.T) {
	released := make(chan struct{})
	block := make(chan struct{})
	r := &releaser{free: func() { <-block; released <- struct{}{} }}
	r.mark.Store(heapAllocated())
	if r.afterSync() {
		t.Fatal("released after a sync that allocated nothing")
	}
	allocate(ReleaseAfter + 1<<20)
	if !r.afterSync() {
		t.Fatal("no release after a sync that allocated more than ReleaseAfter")
	}
	allocate(ReleaseAfter + 1<<20)
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

// The release returns the garbage's pages to the operating system: the heap's released bytes
// grow by about what was allocated (measured with the runtime's own counters).
func TestReleaseReturnsMemory(t *testing.T) {
	r := newReleaser()
	heapReleased := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	keep := make([][]byte, 0, 64)
	for range 64 { // 64 MiB live, then garbage: the heap grew to hold it
		keep = append(keep, make([]byte, 1<<20))
	}
	before := heapReleased()
	keep = nil
	_ = keep
	if !r.afterSync() {
		t.Fatal("no release after 64 MiB")
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.running.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := heapReleased() - before; got < 48<<20 {
		t.Fatalf("released %d MiB to the operating system, want at least 48 of the 64 allocated", got>>20)
	}
}
