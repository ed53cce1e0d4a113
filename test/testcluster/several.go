package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
)

// StartRetrying is Start, started again on new ports (up to twice) when another process took
// one of them between their choice and the component's bind: a client's ephemeral port, with
// test packages or clusters starting side by side. A given Dir is reused.
func StartRetrying(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := Start(ctx, opts)
	for attempt := 1; err != nil && portTaken(err) && attempt < 3 && ctx.Err() == nil; attempt++ {
		fmt.Fprintf(os.Stderr, "testcluster: a port was taken before a component bound it; starting again: %v\n", err)
		c, err = Start(ctx, opts)
	}
	return c, err
}

// StartSeveral starts a cluster for each name at once (StartRetrying), for tests of several
// clusters (a fleet). If any fails, it stops those that started and returns every error, each
// naming its cluster.
func StartSeveral(ctx context.Context, opts map[string]Options) (map[string]*Cluster, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	out := map[string]*Cluster{}
	for name, o := range opts {
		wg.Go(func() {
			c, err := StartRetrying(ctx, o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
				return
			}
			out[name] = c
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		for _, c := range out {
			_ = c.Stop()
		}
		return nil, errors.Join(errs...)
	}
	return out, nil
}
