package nodelabeler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuctl/gpuctl/nodelabeler/nvmlinfo"
)

// DefaultInterval is the time between two passes.
const DefaultInterval = 60 * time.Second

// NodeNameEnv is the environment variable that names the node when --node-name is not set;
// the DaemonSet fills it from the downward API (spec.nodeName).
const NodeNameEnv = "NODE_NAME"

// Options are the labeler's settings.
type Options struct {
	// NodeName is the Node to label.
	NodeName string
	// Interval is the time between passes.
	Interval time.Duration
	// Oneshot runs one pass and returns its error.
	Oneshot bool
	// NVML is the source given to [nvmlinfo.Open]: real, mock:dgxa100 or mock:dgxh100.
	NVML string
}

// DefaultOptions returns the defaults: every 60 s, the real NVML, NODE_NAME from the
// environment.
func DefaultOptions() Options {
	return Options{NodeName: os.Getenv(NodeNameEnv), Interval: DefaultInterval, NVML: nvmlinfo.SourceReal}
}

// BindFlags adds the labeler's flags.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "the Node to label (default: $"+NodeNameEnv+")")
	fs.DurationVar(&o.Interval, "interval", o.Interval, "time between two passes")
	fs.BoolVar(&o.Oneshot, "oneshot", o.Oneshot, "run one pass and exit (non-zero if it failed)")
	fs.StringVar(&o.NVML, "nvml", o.NVML, "where GPU facts come from: real (the host driver's libnvidia-ml.so.1), or go-nvml's mock servers mock:dgxa100 (8 × A100-SXM4-40GB) and mock:dgxh100 (8 × H100 80GB HBM3)")
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, fmt.Errorf("--node-name (or $%s) is required", NodeNameEnv))
	}
	if !o.Oneshot && o.Interval <= 0 {
		errs = append(errs, fmt.Errorf("--interval %s: must be positive", o.Interval))
	}
	return errors.Join(errs...)
}

// Labeler discovers the node's GPUs and publishes them as labels.
type Labeler struct {
	// NVML is asked on every pass; it is initialised and shut down each time.
	NVML nvmlinfo.Library
	// Nodes is the Node API.
	Nodes NodeClient
	// Node is the name of the Node to label.
	Node string
	// Log receives one line per pass, and NVML's warnings.
	Log *slog.Logger
}

// Pass asks NVML once and applies the labels. When NVML cannot be initialised (no driver),
// the node gets gpu-count=0 alone and Pass succeeds; when discovery fails after that, nothing
// is applied and the labels of the last pass stay.
func (l *Labeler) Pass(ctx context.Context) (Result, error) {
	var labels map[string]string
	inv, err := nvmlinfo.Discover(l.NVML)
	var unavailable *nvmlinfo.UnavailableError
	switch {
	case errors.As(err, &unavailable):
		l.Log.Warn("NVML unavailable; publishing gpu-count=0", "node", l.Node, "reason", err)
		labels = NoGPULabels()
	case err != nil:
		return Result{Node: l.Node}, fmt.Errorf("node %s: discover gpus: %w", l.Node, err)
	default:
		for _, w := range inv.Warnings {
			l.Log.Warn("NVML call failed; the label it feeds is left out or estimated", "node", l.Node, "error", w)
		}
		labels = Labels(inv)
	}
	res, err := Apply(ctx, l.Nodes, l.Node, labels)
	if err != nil {
		return res, err
	}
	l.Log.Info("labels "+string(res.Outcome), "node", l.Node, "gpus", len(inv.GPUs),
		"labels", res.Labels, "set", res.Set, "removed", res.Removed)
	return res, nil
}

// Run runs a pass now and then every interval until ctx is done. A failed pass is logged and
// retried at the next tick; Run returns nil when ctx is done.
func (l *Labeler) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := l.Pass(ctx); err != nil && ctx.Err() == nil {
			l.Log.Error("pass failed; retrying at the next interval", "node", l.Node, "error", err, "interval", interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
