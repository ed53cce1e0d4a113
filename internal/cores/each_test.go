package cores

import (
	"sync/atomic"
	"testing"
)

// TestEach: every index is called once, each worker id is in range.
func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, 2, 1000} {
		calls := make([]atomic.Int32, n)
		EachWorker(n, func(w, i int) {
			if w < 0 || w >= Workers(n) {
				t.Errorf("worker %d of %d", w, Workers(n))
			}
			calls[i].Add(1)
		})
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d called %d times", n, i, c)
			}
		}
	}
}
