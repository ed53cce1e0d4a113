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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	code := 0
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		code = 1
	}
	os.Exit(code)
}

// run builds the command and runs it until it ends or ctx is cancelled (SIGINT, SIGTERM).
func run(ctx context.Context) error {
	return app.NewCommand().ExecuteContext(ctx)
}
