// Command gpuctl validates, renders, diffs and syncs gpuctl files. See `gpuctl --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
)

func main() {
	err := run()
	if err != nil && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(app.Code(err))
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return app.NewRootCommand(app.Streams{Out: os.Stdout, Err: os.Stderr}).ExecuteContext(ctx)
}
