package httpapi

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/usage"
	"golang.org/x/sync/singleflight"
	g "maragu.dev/gomponents"
	h "maragu.dev/gomponents/html"
)

// The pages' GPU usage, from Prometheus (package usage): on a job's page, line charts of its
// GPU utilization and GPU memory over its life, a line per pod (rank) of a multi-pod job; on
// the overview, a small chart per pool of the last 6 h of its GPUs' utilization, read once for
// every reader every uiUsageTTL. The charts are inline SVG drawn here, no script; every name in
// them goes through gomponents' escaping text and attribute nodes.

// Limits of the usage charts.
const (
	uiUsageOff     = "GPU usage: no Prometheus (--prometheus-url)"
	uiChartLines   = 8                // pods drawn on a job's chart
	uiChartPools   = 12               // pools charted on the overview
	uiPoolRange    = 6 * time.Hour    // the overview's pool charts
	uiUsageTTL     = 30 * time.Second // the overview's pool charts are read once per this
	uiUsageTimeout = 10 * time.Second // a read of the charts' series
)

// Geometry of the line charts (SVG user units), big on the job page and small on the overview.
type chartBox struct{ width, height, left, right, top, bottom float64 }

var (
	jobChartBox  = chartBox{width: 540, height: 200, left: 52, right: 14, top: 12, bottom: 26}
	poolChartBox = chartBox{width: 280, height: 96, left: 40, right: 8, top: 8, bottom: 22}
)

// uiUsage is a usage section: the line to show without Prometheus (Off), its error, its charts
// and a note.
type uiUsage struct {
	Off    string
	Err    string
	Note   string
	Charts []uiLineChart
}

// uiLineChart is a line chart from Start to End of values from 0 to YMax (in Unit): a
// polyline per line.
type uiLineChart struct {
	ID    string
	Title string // the chart's <title> and its heading
	Unit  string // "%" or " GiB", after each number
	Start time.Time
	End   time.Time
	Now   time.Time // End is labelled "now" when it is this close to Now
	Step  time.Duration
	YMax  float64
	Box   chartBox
	Lines []uiLine
}

// uiLine is a series of a chart: its name (a pod, a pool) and its points.
type uiLine struct {
	Name   string
	Points []usage.Point
}

// x and y place a point in the chart's box; a value is kept within 0..YMax.
func (c uiLineChart) x(t time.Time) float64 {
	span := c.End.Sub(c.Start)
	w := c.Box.width - c.Box.left - c.Box.right
	if span <= 0 {
		return c.Box.left
	}
	return c.Box.left + w*min(1, max(0, float64(t.Sub(c.Start))/float64(span)))
}

func (c uiLineChart) y(v float64) float64 {
	hgt := c.Box.height - c.Box.top - c.Box.bottom
	return c.Box.top + hgt*(1-min(1, max(0, v/c.YMax)))
}

// number writes a coordinate or a value: at most one decimal, none when whole.
func number(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

// niceCeil is the smallest of 1, 2, 5 × 10^k at or above f (1 for f ≤ 1).
func niceCeil(f float64) float64 {
	if f <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(f)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= f {
			return m * p
		}
	}
	return 10 * p
}

// timeLabel is a time on a chart's axis: "now" near c.Now, the hour and minute UTC, with the
// day for a range over a day.
func (c uiLineChart) timeLabel(t time.Time) string {
	if !c.Now.IsZero() && c.Now.Sub(t).Abs() <= max(c.Step, time.Minute) {
		return "now"
	}
	if c.End.Sub(c.Start) > 24*time.Hour {
		return t.UTC().Format("Jan 2 15:04")
	}
	return t.UTC().Format("15:04 UTC")
}

// lineChart is a chart as an inline SVG image titled c.Title, with its axes' labels (0 and YMax,
// the start and the end) and a legend: per line its name, min, average, max and last value.
func lineChart(c uiLineChart) g.Node {
	b := c.Box
	w, hgt := number(b.width), number(b.height)
	x0, x1, yTop, yBottom := number(b.left), number(b.width-b.right), number(b.top), number(b.height-b.bottom)
	text := func(class, x, y, anchor, s string) g.Node {
		return g.El("text", h.Class(class), g.Attr("x", x), g.Attr("y", y), g.Attr("text-anchor", anchor), g.Text(s))
	}
	line := func(class, xa, ya, xb, yb string) g.Node {
		return g.El("line", h.Class(class), g.Attr("x1", xa), g.Attr("y1", ya), g.Attr("x2", xb), g.Attr("y2", yb))
	}
	tickY := number(b.height - b.bottom + 15)
	svg := g.El("svg", h.ID(c.ID), h.Class("chart line-chart"), h.Role("img"), h.Aria("label", c.Title),
		h.Width(w), h.Height(hgt), g.Attr("viewBox", "0 0 "+w+" "+hgt), g.Attr("xmlns", "http://www.w3.org/2000/svg"),
		g.El("title", g.Text(c.Title)),
		line("grid", x0, number(c.y(c.YMax/2)), x1, number(c.y(c.YMax/2))),
		line("axis", x0, yTop, x0, yBottom),
		line("axis", x0, yBottom, x1, yBottom),
		text("tick y-max", number(b.left-5), number(b.top+4), "end", number(c.YMax)+c.Unit),
		text("tick y-min", number(b.left-5), yBottom, "end", "0"+c.Unit),
		text("tick x-start", x0, tickY, "start", c.timeLabel(c.Start)),
		text("tick x-end", x1, tickY, "end", c.timeLabel(c.End)),
		g.Map(indexed(c.Lines), func(il indexedLine) g.Node {
			pts := make([]string, len(il.Points))
			for i, p := range il.Points {
				pts[i] = number(c.x(p.Timestamp)) + "," + number(c.y(p.Value))
			}
			return g.El("g", h.Class("series s-"+strconv.Itoa(il.i%uiChartLines)), h.Data("name", il.Name),
				g.El("title", g.Text(il.Name+": "+c.stats(il.Points))),
				g.El("polyline", h.Class("line"), g.Attr("points", strings.Join(pts, " "))))
		}),
	)
	legend := h.Ul(h.Class("chart-legend"), g.Map(indexed(c.Lines), func(il indexedLine) g.Node {
		return h.Li(h.Span(h.Class("key s-"+strconv.Itoa(il.i%uiChartLines))), h.Code(g.Text(il.Name)),
			g.Text(" "), muted(c.stats(il.Points)))
	}))
	return h.Figure(h.Class("usage-chart"), h.FigCaption(g.Text(c.Title)), svg, legend)
}

// stats are a line's min, average, max and last value in words.
func (c uiLineChart) stats(ps []usage.Point) string {
	if len(ps) == 0 {
		return "no series"
	}
	st := usage.StatsOf(ps)
	return fmt.Sprintf("min %s%s · avg %s%s · max %s%s · now %s%s", number(st.Min), c.Unit, number(st.Avg), c.Unit,
		number(st.Max), c.Unit, number(ps[len(ps)-1].Value), c.Unit)
}

type indexedLine struct {
	uiLine
	i int
}

func indexed(ls []uiLine) []indexedLine {
	out := make([]indexedLine, len(ls))
	for i, l := range ls {
		out[i] = indexedLine{l, i}
	}
	return out
}

// usageSection is a usage section titled title: the Off line, the error, or the charts.
func usageSection(id, title string, u uiUsage) g.Node {
	head := g.Group{h.H2(g.Text(title))}
	switch {
	case u.Off != "":
		return section(id, head, mutedP(u.Off))
	case u.Err != "":
		return section(id, head, errorBox("GPU usage unavailable:", u.Err))
	}
	return section(id, head,
		g.If(len(u.Charts) > 0, h.Div(h.Class("usage-charts"), g.Map(u.Charts, lineChart))),
		g.If(u.Note != "", smallNote(u.Note)))
}

// uiJobUsage reads the job's series over its life (its last 24 h at most) and lays out its
// charts: GPU utilization and GPU memory, a line for the job, or one per pod (the first
// uiChartLines by name) of a job with several.
func (s *server) uiJobUsage(ctx context.Context, job cluster.JobDetail, now time.Time) uiUsage {
	if s.opts.Usage == nil {
		return uiUsage{Off: uiUsageOff}
	}
	mr, err := parseMetricsRange(nil, job, now)
	if err != nil {
		return uiUsage{Err: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, uiUsageTimeout)
	defer cancel()
	series, err := s.opts.Usage.JobSeries(ctx, jobPodKeys(job, true), mr.start, mr.end, mr.step)
	if err != nil {
		return uiUsage{Err: s.sectionError("usage", err)}
	}
	if len(series.GPUUtilization) == 0 && len(series.MemoryUsage) == 0 {
		return uiUsage{Note: "No GPU series in Prometheus for this job's pods since " + uiStamp(mr.start) + "."}
	}
	util := []uiLine{{Name: job.JobID, Points: series.GPUUtilization}}
	mem := []uiLine{{Name: job.JobID, Points: series.MemoryUsage}}
	var note string
	if len(series.Pods) > 1 {
		util, mem = nil, nil
		for i, p := range series.Pods {
			if i == uiChartLines {
				note = humanize.Plural(len(series.Pods)-uiChartLines, "more pod") + " not drawn (GET /api/v1/jobs/" + job.JobID + "/metrics has them all)."
				break
			}
			util = append(util, uiLine{Name: p.Pod, Points: p.GPUUtilization})
			mem = append(mem, uiLine{Name: p.Pod, Points: p.MemoryUsage})
		}
	}
	memMax := 0.0
	for _, l := range mem {
		memMax = max(memMax, usage.StatsOf(l.Points).Max)
	}
	base := uiLineChart{Start: mr.start, End: mr.end, Now: now, Step: mr.step, Box: jobChartBox}
	u, m := base, base
	u.ID, u.Title, u.Unit, u.YMax, u.Lines = "usage-util", "GPU utilization of "+job.JobID+", %", "%", 100, util
	m.ID, m.Title, m.Unit, m.YMax, m.Lines = "usage-memory", "GPU memory used by "+job.JobID+", GiB", " GiB", niceCeil(memMax), mem
	return uiUsage{Charts: []uiLineChart{u, m}, Note: note}
}

// usageCache holds the overview's pool charts for uiUsageTTL: the readers of the page within
// that time share one read of Prometheus.
type usageCache struct {
	mu     sync.Mutex
	at     time.Time
	val    uiUsage
	flight singleflight.Group
}

// get returns the cached charts, or those that fill reads when they are older than ttl; a
// reader that comes while another reads waits for that read.
func (c *usageCache) get(ttl time.Duration, fill func() uiUsage) uiUsage {
	fresh := func() (uiUsage, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.val, !c.at.IsZero() && time.Since(c.at) < ttl
	}
	if v, ok := fresh(); ok {
		return v
	}
	v, _, _ := c.flight.Do("", func() (any, error) {
		if v, ok := fresh(); ok {
			return v, nil
		}
		v := fill()
		c.mu.Lock()
		c.val, c.at = v, time.Now()
		c.mu.Unlock()
		return v, nil
	})
	return v.(uiUsage)
}

// uiPoolUsage is the overview's pool charts: the last uiPoolRange of the average utilization
// of the GPUs of each pool's nodes, for the first uiChartPools pools that have nodes. Pools
// and nodes are the same for every token, so every reader shares them (usageCache).
func (s *server) uiPoolUsage(ctx context.Context) uiUsage {
	if s.opts.Usage == nil {
		return uiUsage{Off: uiUsageOff}
	}
	// The read outlives a reader that goes away: the others wait for it.
	ctx = context.WithoutCancel(ctx)
	return s.poolUsage.get(uiUsageTTL, func() uiUsage {
		ctx, cancel := context.WithTimeout(ctx, uiUsageTimeout)
		defer cancel()
		return s.readPoolUsage(ctx, time.Now())
	})
}

func (s *server) readPoolUsage(ctx context.Context, now time.Time) uiUsage {
	rd, err := s.model(ctx)
	if err != nil {
		return uiUsage{Err: s.sectionError("pool usage", err)}
	}
	pools, err := rd.Pools(ctx)
	if err != nil {
		return uiUsage{Err: s.sectionError("pool usage", err)}
	}
	nodes, err := rd.Nodes(ctx, cluster.NodeFilter{})
	if err != nil {
		return uiUsage{Err: s.sectionError("pool usage", err)}
	}
	byPool := map[string][]string{}
	for _, n := range nodes.Items {
		byPool[n.Pool] = append(byPool[n.Pool], n.NodeName)
	}
	var names []string
	charted := map[string][]string{}
	more := 0 // pools with nodes past the first uiChartPools
	for _, p := range pools.Items {
		switch {
		case len(byPool[p.Name]) == 0:
		case len(names) == uiChartPools:
			more++
		default:
			names = append(names, p.Name)
			charted[p.Name] = byPool[p.Name]
		}
	}
	out := uiUsage{}
	if len(names) == 0 {
		out.Note = "No pool has nodes."
		return out
	}
	if more > 0 {
		out.Note = humanize.Plural(more, "more pool") + " not charted."
	}
	// up to now, not a rounded end: a series that begins now still shows
	start, step := now.Add(-uiPoolRange), usage.DefaultStep(uiPoolRange)
	series, err := s.opts.Usage.PoolSeries(ctx, charted, start, now, step)
	if err != nil {
		return uiUsage{Err: s.sectionError("pool usage", err)}
	}
	for i, name := range names {
		out.Charts = append(out.Charts, uiLineChart{ID: "pool-usage-" + strconv.Itoa(i), Title: "GPU utilization of pool " + name + ", last 6 h, %",
			Unit: "%", Start: start, End: now, Now: now, Step: step, YMax: 100, Box: poolChartBox,
			Lines: []uiLine{{Name: name, Points: series[name]}}})
	}
	return out
}
