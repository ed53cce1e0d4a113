// Command gpuctl-reconciler keeps a cluster in sync with a tree of gpuctl files. See
// `gpuctl-reconciler --help` and docs/daemon.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return app.NewCommand().ExecuteContext(ctx)
}
