package app

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/usage"
)

// What the GPU metrics commands (top, idle, describe job's Usage) share: the flags, the
// Prometheus client and its errors' exit codes, and how a number is printed.

// metricsOptions are the flags of top and idle: the read model's, the Prometheus', -o and,
// for a verb over jobs, -n and -A.
type metricsOptions struct {
	read   readOptions
	scope  scopeOptions
	prom   options.Prometheus
	output string
	// scoped says whether the verb has -n and -A.
	scoped bool
}

// bind adds the flags; scoped adds -n and -A (what -n selects).
func (o *metricsOptions) bind(cmd *cobra.Command, scoped string) {
	o.read.BindFlags(cmd.Flags())
	o.prom.BindFlags(cmd.Flags())
	if scoped != "" {
		o.scope.bindFlags(cmd, scoped)
		o.scoped = true
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml (default: a table)")
}

// start checks -o, makes the Prometheus client (exit 2 without one: the metrics need it, and
// nothing of the cluster is read before) and the read model, and resolves the namespace
// ("" for all) when the verb has -n and -A.
func (o *metricsOptions) start(cmd *cobra.Command) (*usage.Client, cluster.Model, string, error) {
	if err := outputFlag(o.output, "", outputWide, outputJSON, outputYAML); err != nil {
		return nil, nil, "", err
	}
	pc, err := prometheusClient(&o.prom)
	if err != nil {
		return nil, nil, "", err
	}
	m, err := o.read.Model(cmd.ErrOrStderr())
	if err != nil {
		return nil, nil, "", err
	}
	if !o.scoped {
		return pc, m, "", nil
	}
	ns, err := o.scope.resolve(&o.read.kube, m)
	return pc, m, ns, err
}

// prometheusClient is the client of the flags; its errors (none named, a bad URL or file)
// exit 2, usage.ErrNoPrometheus's text being the one line said without a Prometheus.
func prometheusClient(o *options.Prometheus) (*usage.Client, error) {
	pc, err := o.Client()
	if err != nil {
		return nil, &ExitError{Code: ExitTrouble, Err: err}
	}
	return pc, nil
}

// metricsError is the exit of a failed Prometheus query: 2, the command could not do its work.
func metricsError(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitTrouble, Err: err}
}

// metricsScope is the Prometheus scope of a namespace ("" for every namespace).
func metricsScope(namespace string) usage.Scope {
	if namespace == "" {
		return usage.Scope{}
	}
	return usage.Scope{Namespaces: []string{namespace}}
}

// noValue is the cell of a number that no series gave: unknown, which is not 0 (an idle GPU).
const noValue = "-"

// percentCell is a percentage as "87%".
func percentCell(v float64) string { return fmt.Sprintf("%.0f%%", v) }

// gib is MiB in GiB, as a GPU's memory is printed.
func gib(mib float64) float64 { return mib / 1024 }

// memoryCell is GPU memory used of the total, "68.2/80.0 GiB"; the used alone when the total
// is unknown, noValue without series.
func memoryCell(u usage.Usage) string {
	switch {
	case u.Reporting == 0:
		return noValue
	case u.MemTotalMiB <= 0:
		return fmt.Sprintf("%.1f GiB", gib(u.MemUsedMiB))
	}
	return fmt.Sprintf("%.1f/%.1f GiB", gib(u.MemUsedMiB), gib(u.MemTotalMiB))
}

// utilCell is the average utilization of the GPUs that report one, noValue when none does.
func utilCell(u usage.Usage) string {
	if u.Busy+u.Idle == 0 {
		return noValue
	}
	return percentCell(u.Util)
}

// powerCell is the power drawn, "612 W", noValue without series.
func powerCell(u usage.Usage) string {
	if u.Reporting == 0 {
		return noValue
	}
	return fmt.Sprintf("%.0f W", u.PowerW)
}

// busyCell is the share of the allocated GPUs that are busy, noValue when nothing is
// allocated or no GPU reports its utilization.
func busyCell(share float64, allocated int64, u usage.Usage) string {
	if allocated <= 0 || u.Busy+u.Idle == 0 {
		return noValue
	}
	return percentCell(share * 100)
}

// windowText is a window as PromQL writes it, for headers: "5m", "1h30m".
func windowText(d time.Duration) string { return model.Duration(d).String() }

// checkWindow refuses a window, step or run length that is not positive.
func checkWindow(flag string, d time.Duration) error {
	if d <= 0 {
		return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("--%s %s: want a positive duration such as 5m", flag, d)}
	}
	return nil
}

// sparkLevels are the eight heights of a sparkline, lowest first.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// sparkWidth is the most columns a sparkline takes.
const sparkWidth = 60

// sparkline draws points from start to end in at most width columns: each column is the
// average of the points in its share of the range, scaled from 0 to top (the points'
// maximum when top is 0) over ▁..█; a column without a point is a space (nothing is known of
// it). Fewer columns than width are drawn when the range has fewer steps.
func sparkline(points []usage.Point, start, end time.Time, step time.Duration, width int, top float64) string {
	span := end.Sub(start)
	if width <= 0 || span <= 0 {
		return ""
	}
	if step > 0 {
		width = min(width, int(span/step)+1)
	}
	sums, ns := make([]float64, width), make([]int, width)
	for _, p := range points {
		off := p.Timestamp.Sub(start)
		if off < 0 || off > span {
			continue
		}
		i := min(int(float64(off)/float64(span)*float64(width)), width-1)
		sums[i] += p.Value
		ns[i]++
	}
	if top <= 0 {
		for _, p := range points {
			top = max(top, p.Value)
		}
	}
	var b strings.Builder
	for i := range width {
		if ns[i] == 0 {
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(sparkLevel(sums[i]/float64(ns[i]), top))
	}
	return b.String()
}

// sparkLevel is the block of v on a scale from 0 to top: ▁ at or below 0 (or when top is 0),
// █ at or above top.
func sparkLevel(v, top float64) rune {
	if top <= 0 || v <= 0 || math.IsNaN(v) {
		return sparkLevels[0]
	}
	i := int(math.Round(v / top * float64(len(sparkLevels)-1)))
	return sparkLevels[min(max(i, 0), len(sparkLevels)-1)]
}
