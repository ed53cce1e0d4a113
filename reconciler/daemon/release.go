package daemon

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// ReleaseAfter is how much the daemon allocates (syncs, renders ahead) before it collects its
// garbage and returns the free memory to the operating system, once a sync has ended.
//
// A sync of many objects allocates much more than stays live: a first sync of 10,000 objects
// several hundred MiB, an edit's sync about 50 MiB. The collector sets its next goal from the
// heap it finds live, at twice that; a collection in the middle of a sync finds the sync's
// objects live, and the heap grows to twice the daemon's memory plus theirs, and keeps the pages
// after the sync (the runtime returns them over minutes). Collected at the end of such a sync,
// the heap between syncs is what stays live, and the next sync starts with that much room: at
// 10,000 objects the daemon's memory between syncs fell from ~215 to ~150 MiB (bench/README.md).
// A no-op sync allocates a few MiB and does not collect.
const ReleaseAfter = 32 << 20

// releaser collects and frees memory after syncs that allocated at least ReleaseAfter since the
// last time, one collection at a time, in the background: the next sync need not wait for it.
type releaser struct {
	mark    atomic.Uint64 // bytes allocated at the last release
	running atomic.Bool
	free    func() // debug.FreeOSMemory; tests count instead
}

func newReleaser() *releaser {
	r := &releaser{free: debug.FreeOSMemory}
	r.mark.Store(heapAllocated())
	return r
}

// heapAllocated is the total of the bytes the program has allocated on the heap.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// afterSync starts a release when enough was allocated since the last one and none runs, and
// says whether it did.
func (r *releaser) afterSync() bool {
	now := heapAllocated()
	if now-r.mark.Load() < ReleaseAfter || !r.running.CompareAndSwap(false, true) {
		return false
	}
	r.mark.Store(now)
	go func() {
		defer r.running.Store(false)
		r.free()
	}()
	return true
}
