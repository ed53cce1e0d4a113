// Command gpuctl validates, renders, diffs and syncs gpuctl files, and reads what runs (get,
// describe, logs, events). See `gpuctl --help`. Installed as kubectl-gpuctl, it is the kubectl
// plugin `kubectl gpuctl`.
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
	code := app.RunProgram(ctx, app.Streams{Out: os.Stdout, Err: os.Stderr}, os.Args) // until done, SIGINT or SIGTERM
	stop()
	os.Exit(code) // 0, app.ExitFailed (the answer is no) or app.ExitTrouble
}
