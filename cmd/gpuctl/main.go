// Command gpuctl validates, renders, diffs and syncs gpuctl files. See `gpuctl --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuctl/gpuctl/internal/cli"
)

func main() {
	err := run()
	if err != nil && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(cli.Code(err))
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.NewRootCommand(cli.Streams{Out: os.Stdout, Err: os.Stderr}).ExecuteContext(ctx)
}
