package nodelabeler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuctl/gpuctl/internal/keys"
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
	// DryRun prints the labels a pass would publish and exits ([DryRun]); it needs no node
	// name and no cluster.
	DryRun bool
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
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "print the labels NVML's answers give, as sorted key=value lines, and exit (no cluster, kubeconfig or node name needed; non-zero when NVML cannot be initialised)")
	fs.StringVar(&o.NVML, "nvml", o.NVML, "where GPU facts come from: real (the host driver's libnvidia-ml.so.1), or go-nvml's mock servers mock:dgxa100 (8 × A100-SXM4-40GB) and mock:dgxh100 (8 × H100 80GB HBM3)")
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.NodeName == "" && !o.DryRun {
		errs = append(errs, fmt.Errorf("--node-name (or $%s) is required", NodeNameEnv))
	}
	if !o.Oneshot && !o.DryRun && o.Interval <= 0 {
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

// DryRun asks NVML once and writes the labels a pass would publish to w, one key=value line
// each, sorted by key; it reads no cluster, so it cannot say which labels a pass would remove
// from a node. NVML's warnings go to log. When NVML cannot be initialised it returns the
// *nvmlinfo.UnavailableError, saying that a pass would publish gpu-count=0 alone.
func DryRun(lib nvmlinfo.Library, w io.Writer, log *slog.Logger) error {
	inv, err := nvmlinfo.Discover(lib)
	var unavailable *nvmlinfo.UnavailableError
	switch {
	case errors.As(err, &unavailable):
		return fmt.Errorf("%w (a pass would publish %s=0 alone)", err, keys.GPUCount)
	case err != nil:
		return fmt.Errorf("discover gpus: %w", err)
	}
	for _, warning := range inv.Warnings {
		log.Warn("NVML call failed; the label it feeds is left out or estimated", "error", warning)
	}
	labels := Labels(inv)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if _, err := fmt.Fprintf(w, "%s=%s\n", k, labels[k]); err != nil {
			return err
		}
	}
	return nil
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
