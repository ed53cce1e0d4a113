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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil && err.Error() != "" { // an empty message was printed by the command
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(app.Code(err)) // 0, app.ExitFailed (the answer is no) or app.ExitTrouble
}

// run builds the command and runs it until it ends or ctx is cancelled (SIGINT, SIGTERM).
func run(ctx context.Context) error {
	return app.NewRootCommand(app.Streams{Out: os.Stdout, Err: os.Stderr}).ExecuteContext(ctx)
}
