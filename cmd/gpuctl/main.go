// Command gpuctl validates, renders, diffs and syncs gpuctl files, and reads what runs (get,
// describe, logs, events). See `gpuctl --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, app.Streams{Out: os.Stdout, Err: os.Stderr}, os.Args[1:]) // until done, SIGINT or SIGTERM
	stop()
	os.Exit(code) // 0, app.ExitFailed (the answer is no) or app.ExitTrouble
}
