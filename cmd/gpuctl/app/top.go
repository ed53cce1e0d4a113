package app

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/usage"
)

func newTopCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top jobs|nodes|pools",
		Short: "Show what GPUs do: utilization, GPU memory and power per job, node or pool",
		Long: `Show what the GPUs do, read from the Prometheus that scrapes NVIDIA's dcgm-exporter
(--prometheus-url or $GPUCTL_PROMETHEUS_URL; docs/metrics.md), as kubectl top shows CPU:

  gpuctl top jobs      each running job that holds GPUs: its GPUs' utilization, memory, power
  gpuctl top nodes     each GPU node: GPUs, allocated, the share of allocated GPUs that are busy
  gpuctl top pools     the same per pool

Utilization and power are averaged over --window (the column headers say it: UTIL(5m));
memory is the last value seen, used/total. A GPU is busy at or above 5% utilization. A value
no series gave is "-": unknown, not idle. "USED" in gpuctl get counts requested GPUs; top
says whether they work. Without a Prometheus it says so and exits 2.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newTopJobsCommand(s), newTopNodesCommand(s), newTopPoolsCommand(s))
	return cmd
}

// topOptions are the flags of gpuctl top.
type topOptions struct {
	metricsOptions
	sortBy string
	window time.Duration
}

// bind adds the flags; scoped is what -n selects ("" for a verb without -n and -A).
func (o *topOptions) bind(cmd *cobra.Command, scoped string) {
	o.metricsOptions.bind(cmd, scoped)
	cmd.Flags().StringVar(&o.sortBy, "sort-by", "", "sort by util, memory, power or gpus (highest first), or name (default: by name)")
	cmd.Flags().DurationVar(&o.window, "window", usage.DefaultWindow, "average utilization and power over this window")
}

// topSorts are the --sort-by keys of gpuctl top.
var topSorts = []string{"util", "memory", "power", "gpus", "name"}

// start checks --sort-by and --window, then does what metricsOptions.start does.
func (o *topOptions) start(cmd *cobra.Command) (*usage.Client, cluster.Model, string, error) {
	if o.sortBy != "" && !slices.Contains(topSorts, o.sortBy) {
		return nil, nil, "", &ExitError{Code: ExitTrouble, Err: fmt.Errorf("--sort-by %q: want one of %s", o.sortBy, strings.Join(topSorts, ", "))}
	}
	if err := checkWindow("window", o.window); err != nil {
		return nil, nil, "", err
	}
	return o.metricsOptions.start(cmd)
}

// TopList is what gpuctl top -o json|yaml prints: the window and the rows.
type TopList[T any] struct {
	// Window is the window over which utilization and power are averaged ("5m0s").
	Window usage.Duration `json:"window"`
	Items  []T            `json:"items"`
}

// readBoth runs the read model's and Prometheus' reads at once, each to its end (so that
// neither reports the other's cancellation); an error of the model is readError's, one of
// Prometheus metricsError's.
func readBoth(ctx context.Context, model, metrics func(context.Context) error) error {
	var wg sync.WaitGroup
	var merr, perr error
	wg.Go(func() { merr = model(ctx) })
	wg.Go(func() { perr = metrics(ctx) })
	wg.Wait()
	if merr != nil {
		return readError(merr)
	}
	return metricsError(perr)
}

func newTopJobsCommand(s Streams) *cobra.Command {
	var o topOptions
	cmd := &cobra.Command{
		Use:     "jobs",
		Aliases: []string{"job"},
		Short:   "Show each running GPU job's utilization, GPU memory and power",
		Long: `Show one row per job with a running pod that requests GPUs: its GPUs, their utilization
averaged over the window and over the GPUs, GPU memory used/total and power. -o wide adds
the pool, the nodes, and how many of its GPUs are busy (at or above 5%) and idle. Jobs are
those of -n, of every namespace with -A, else of the kubeconfig context's namespace.`,
		Example: `  gpuctl top jobs -A --sort-by util
  gpuctl top jobs -n alice --window 1h -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pc, m, ns, err := o.start(cmd)
			if err != nil {
				return err
			}
			var pods cluster.JobPodList
			var gpus []usage.GPU
			if err := readBoth(cmd.Context(), func(ctx context.Context) (err error) {
				pods, err = m.JobPods(ctx, cluster.JobPodFilter{Namespace: ns})
				return err
			}, func(ctx context.Context) (err error) {
				gpus, err = pc.GPUs(ctx, metricsScope(ns), o.window)
				return err
			}); err != nil {
				return err
			}
			rows := usage.TopJobs(pods.UsagePods(), gpus, usage.DefaultIdleThreshold)
			sortTop(rows, o.sortBy, func(r usage.JobTop) (string, usage.Usage, int64) { return r.JobID, r.Usage, r.GPUs })
			if len(rows) == 0 && o.output != outputJSON && o.output != outputYAML {
				fmt.Fprintln(s.Err, noneFound("running GPU jobs", ns))
				return nil
			}
			return printTopJobs(s.Out, rows, o.window, o.output)
		},
	}
	o.bind(cmd, "the jobs of this namespace")
	return cmd
}

// printTopJobs prints the rows of top jobs.
func printTopJobs(w io.Writer, rows []usage.JobTop, window time.Duration, output string) error {
	return printList(w, output, TopList[usage.JobTop]{Window: usage.Duration(window), Items: rows}, rows, listColumns[usage.JobTop]{
		head: []string{"NAMESPACE", "JOB", "KIND", "GPUS", "UTIL(" + windowText(window) + ")", "MEMORY", "POWER(" + windowText(window) + ")"},
		wide: []string{"POOL", "NODES", "BUSY", "IDLE"},
		cells: func(r usage.JobTop, wide bool) []string {
			c := []string{r.Namespace, r.Name, r.Kind, count(r.GPUs), utilCell(r.Usage), memoryCell(r.Usage), powerCell(r.Usage)}
			if wide {
				c = append(c, orNone(r.Pool), orNone(strings.Join(r.Nodes, ",")))
				c = append(c, busyIdleCells(r.Usage)...)
			}
			return c
		},
	})
}

// busyIdleCells are the counts of busy and idle GPUs, noValue when none reports.
func busyIdleCells(u usage.Usage) []string {
	if u.Busy+u.Idle == 0 {
		return []string{noValue, noValue}
	}
	return []string{count(u.Busy), count(u.Idle)}
}

// sortTop sorts rows by --sort-by: a number highest first (a row without it last), ties
// and "name" by the name key.
func sortTop[T any](rows []T, by string, key func(T) (name string, u usage.Usage, gpus int64)) {
	value := func(r T) float64 {
		_, u, gpus := key(r)
		switch by {
		case "util":
			if u.Busy+u.Idle == 0 {
				return -1
			}
			return u.Util
		case "memory":
			if u.Reporting == 0 {
				return -1
			}
			return u.MemUsedMiB
		case "power":
			if u.Reporting == 0 {
				return -1
			}
			return u.PowerW
		case "gpus":
			return float64(gpus)
		}
		return 0
	}
	slices.SortStableFunc(rows, func(a, b T) int {
		if c := cmp.Compare(value(b), value(a)); c != 0 {
			return c
		}
		an, _, _ := key(a)
		bn, _, _ := key(b)
		return cmp.Compare(an, bn)
	})
}

func newTopNodesCommand(s Streams) *cobra.Command {
	var o topOptions
	cmd := &cobra.Command{
		Use:     "nodes",
		Aliases: []string{"node"},
		Short:   "Show each GPU node's GPUs: allocated, busy, utilization, memory, power",
		Long: `Show one row per node with GPUs (or with GPU series): its GPUs, those allocated to pods,
BUSY% (the share of the allocated GPUs that are busy, at or above 5%), and its GPUs'
utilization averaged over the window, memory used/total and power. -o wide adds the GPU type
and how many GPUs report, are busy and are idle. Nodes are the cluster's: no -n.`,
		Example: `  gpuctl top nodes --sort-by util`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := o.nodeRows(cmd)
			if err != nil {
				return err
			}
			if len(rows) == 0 && o.output != outputJSON && o.output != outputYAML {
				fmt.Fprintln(s.Err, "No GPU nodes found.")
				return nil
			}
			sortTop(rows, o.sortBy, func(r usage.NodeTop) (string, usage.Usage, int64) { return r.Node, r.Usage, r.GPUs })
			return printList(s.Out, o.output, TopList[usage.NodeTop]{Window: usage.Duration(o.window), Items: rows}, rows, listColumns[usage.NodeTop]{
				head: []string{"NODE", "POOL", "GPUS", "ALLOC", "BUSY%", "UTIL(" + windowText(o.window) + ")", "MEMORY", "POWER(" + windowText(o.window) + ")"},
				wide: []string{"GPU TYPE", "REPORTING", "BUSY", "IDLE"},
				cells: func(r usage.NodeTop, wide bool) []string {
					c := []string{r.Node, orNone(r.Pool), count(r.GPUs), count(r.Allocated), busyCell(r.BusyShare, r.Allocated, r.Usage),
						utilCell(r.Usage), memoryCell(r.Usage), powerCell(r.Usage)}
					if wide {
						c = append(append(c, orNone(r.GPUType), count(r.Reporting)), busyIdleCells(r.Usage)...)
					}
					return c
				},
			})
		},
	}
	o.bind(cmd, "")
	return cmd
}

// nodeRows reads the nodes and every GPU, and joins them.
func (o *topOptions) nodeRows(cmd *cobra.Command) ([]usage.NodeTop, error) {
	pc, m, _, err := o.start(cmd)
	if err != nil {
		return nil, err
	}
	var nodes cluster.NodeList
	var gpus []usage.GPU
	if err := readBoth(cmd.Context(), func(ctx context.Context) (err error) {
		nodes, err = m.Nodes(ctx, cluster.NodeFilter{})
		return err
	}, func(ctx context.Context) (err error) {
		gpus, err = pc.GPUs(ctx, usage.Scope{}, o.window)
		return err
	}); err != nil {
		return nil, err
	}
	return usage.TopNodes(nodes.UsageNodes(), gpus, usage.DefaultIdleThreshold), nil
}

func newTopPoolsCommand(s Streams) *cobra.Command {
	var o topOptions
	cmd := &cobra.Command{
		Use:     "pools",
		Aliases: []string{"pool"},
		Short:   "Show each pool's GPUs: allocated, busy, utilization, memory",
		Long: `Show one row per pool ("default" holds the nodes in no pool): its nodes, GPUs, those
allocated, BUSY% (the share of the allocated GPUs that are busy, at or above 5%), and its
GPUs' utilization averaged over the window and memory used/total. -o wide adds power and how
many GPUs report, are busy and are idle.`,
		Example: `  gpuctl top pools -o wide`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nodes, err := o.nodeRows(cmd)
			if err != nil {
				return err
			}
			rows := usage.TopPools(nodes, usage.DefaultIdleThreshold)
			if len(rows) == 0 && o.output != outputJSON && o.output != outputYAML {
				fmt.Fprintln(s.Err, "No GPU pools found.")
				return nil
			}
			sortTop(rows, o.sortBy, func(r usage.PoolTop) (string, usage.Usage, int64) { return r.Pool, r.Usage, r.GPUs })
			return printList(s.Out, o.output, TopList[usage.PoolTop]{Window: usage.Duration(o.window), Items: rows}, rows, listColumns[usage.PoolTop]{
				head: []string{"POOL", "NODES", "GPUS", "ALLOC", "BUSY%", "UTIL(" + windowText(o.window) + ")", "MEMORY"},
				wide: []string{"POWER(" + windowText(o.window) + ")", "REPORTING", "BUSY", "IDLE"},
				cells: func(r usage.PoolTop, wide bool) []string {
					c := []string{r.Pool, count(r.Nodes), count(r.GPUs), count(r.Allocated), busyCell(r.BusyShare, r.Allocated, r.Usage),
						utilCell(r.Usage), memoryCell(r.Usage)}
					if wide {
						c = append(append(c, powerCell(r.Usage), count(r.Reporting)), busyIdleCells(r.Usage)...)
					}
					return c
				},
			})
		},
	}
	o.bind(cmd, "")
	return cmd
}
