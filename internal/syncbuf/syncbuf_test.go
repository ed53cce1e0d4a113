package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); len(got) != 8*100*2 || strings.Count(got, "ab") != 800 {
		t.Fatalf("%d bytes, want 1600 of whole writes", len(got))
	}
}
