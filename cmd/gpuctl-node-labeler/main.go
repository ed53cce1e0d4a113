// Command gpuctl-node-labeler runs on every GPU node, asks NVML what GPUs the node has and
// publishes them as g8s.host/ labels on its own Node. See docs/node-labeler.md.
//
// It is the only binary that links go-nvml (cgo). Build it with lazy binding, or it dies at
// start on a machine without the NVIDIA driver ("undefined symbol: nvmlGpmMetricsGet"):
//
//	go build -ldflags=-extldflags=-Wl,-z,lazy ./cmd/gpuctl-node-labeler
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-node-labeler/app"
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
