package cores

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls fn(i) for 0 ≤ i < n on GOMAXPROCS goroutines (or inline for n < 2); results go
// to index i, so order holds.
func Each(n int, fn func(i int)) { EachWorker(n, func(_, i int) { fn(i) }) }

// EachWorker is Each that also tells fn which worker (0 ≤ worker < Workers(n)) calls it, for
// state a worker reuses from one item to the next.
func EachWorker(n int, fn func(worker, i int)) {
	workers := Workers(n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(w, i)
			}
		})
	}
	wg.Wait()
}

// Workers is the number of goroutines Each uses for n items.
func Workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }
