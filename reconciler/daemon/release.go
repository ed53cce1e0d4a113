package daemon

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
)

// releaseAfter is how much the daemon allocates (syncs, renders ahead) before it collects its
// garbage once a sync has ended.
//
// A sync of many objects allocates several times what stays live: a first sync of 10,000
// objects some hundreds of MiB, an edit's sync ~60 MiB. The collector sets its next goal at
// twice the heap it finds live, and a collection in the middle of a sync finds the sync's
// objects live: the heap grows to twice the daemon's memory plus theirs, and stays there until
// the next collection. Collected when such a sync ends, the goal is twice what stays between
// syncs, and the runtime's scavenger returns the pages above it to the system in the
// background: at 10,000 manifests 139–152 MiB once settled, against ~218 (bench/README.md).
// (debug.FreeOSMemory returned them at once, for the same RSS once settled, but every sync then
// faulted its pages in again: edits among 10,000 gpuctl files 326 ms at p50 against 283.) A
// no-op sync allocates a few MiB and does not collect.
const releaseAfter = 32 << 20

// releaser collects after syncs that allocated at least releaseAfter since the last time, one
// collection at a time, in the background: the next sync need not wait for it.
type releaser struct {
	mark    atomic.Uint64 // bytes allocated when the last collection began
	running atomic.Bool
	collect func() // runtime.GC; tests count instead
}

func newReleaser() *releaser {
	r := &releaser{collect: runtime.GC}
	r.mark.Store(heapAllocated())
	return r
}

// heapAllocated is the total of the bytes the program has allocated on the heap.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// afterSync starts a collection when enough was allocated since the last one and none runs,
// and says whether it did.
func (r *releaser) afterSync() bool {
	now := heapAllocated()
	if now-r.mark.Load() < releaseAfter || !r.running.CompareAndSwap(false, true) {
		return false
	}
	r.mark.Store(now)
	go func() {
		defer r.running.Store(false)
		r.collect()
	}()
	return true
}
