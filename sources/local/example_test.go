package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuctl/gpuctl/sources/local"
)

// A Source over a directory: fetch, wait for a change, fetch what changed.
func Example() {
	dir, err := os.MkdirTemp("", "gpuctl-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	pool := filepath.Join(dir, "pool.yaml")
	os.WriteFile(pool, []byte("replicas: 1\n"), 0o644)

	src, err := local.New(local.Options{Root: dir})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	ctx := context.Background()
	rev, _ := src.Fetch(ctx)
	fmt.Println(len(rev.ID), rev.Dir == dir, rev.Changed == nil)

	os.WriteFile(pool, []byte("replicas: 2\n"), 0o644)
	select {
	case <-src.Changes():
	case <-time.After(5 * time.Second):
		fmt.Println("no change seen")
	}
	rev, _ = src.Fetch(ctx)
	fmt.Println(rev.Changed)
	// Output:
	// 40 true true
	// [pool.yaml]
}
