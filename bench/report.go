package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Pass is the measurement of one sync pass of one engine.
type Pass struct {
	Seconds float64 `json:"seconds"`
	Counts
	// ClientCPU is the CPU time of the engine's own process (this process for gpuctl and
	// Flux, the kubectl process for kubectl).
	ClientCPU float64 `json:"clientCPUSeconds"`
	// ServerCPU is the CPU time of kube-apiserver and etcd during the pass.
	ServerCPU float64 `json:"serverCPUSeconds"`
	// RequestLog lists the requests of a pass that made few (gpuctl and Flux only).
	RequestLog []string `json:"requestLog,omitempty"`
	// Summary is what the engine reported doing.
	Summary string `json:"summary"`
	// PlanSeconds is the time of gpuctl's Plan within the pass (gpuctl only).
	PlanSeconds float64 `json:"planSeconds,omitempty"`
	// OtherCPU is the CPU time the machine spent on processes other than the bench, kubectl
	// and the cluster during the pass (other work on a shared machine skews timings).
	OtherCPU float64 `json:"otherCPUSeconds"`
	// SettleSeconds is how long the cluster took to go idle before the pass (untimed).
	SettleSeconds float64 `json:"settleSeconds"`
}

// Result is one engine at one N.
type Result struct {
	N      int    `json:"n"`
	Engine string `json:"engine"`
	Full   *Pass  `json:"full,omitempty"`
	NoOp   *Pass  `json:"noop,omitempty"`
	// FullRuns and NoOpRuns are every run (-runs); Full and NoOp are the median ones.
	FullRuns []*Pass `json:"fullRuns,omitempty"`
	NoOpRuns []*Pass `json:"noopRuns,omitempty"`
	Error    string  `json:"error,omitempty"`
	// ListDiagnosis (gpuctl, with -diagnose) breaks down the list of its no-op sync.
	ListDiagnosis *ListDiagnosis `json:"listDiagnosis,omitempty"`
}

// Check is one bar of the issue at one N.
type Check struct {
	N    int    `json:"n"`
	Name string `json:"name"`
	// Value is the measured ratio (or count, for the write check); Bar is what it must reach.
	Value  float64 `json:"value"`
	Bar    float64 `json:"bar"`
	Pass   bool    `json:"pass"`
	Text   string  `json:"text"`
	Absent bool    `json:"absent,omitempty"` // an engine of the check was not measured
}

// Report is the whole run.
type Report struct {
	// Gpuctl is the git state of the gpuctl checkout measured (commit, and "+changes" when the
	// working tree differs from it).
	Gpuctl  string    `json:"gpuctl,omitempty"`
	Ns      []int     `json:"n"`
	Engines []string  `json:"engines"`
	Notes   []string  `json:"notes"`
	Results []*Result `json:"results"`
	Checks  []Check   `json:"checks"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
}

func (r *Report) find(n int, engine string) *Result {
	for _, res := range r.Results {
		if res.N == n && res.Engine == engine && res.Error == "" && res.Full != nil && res.NoOp != nil {
			return res
		}
	}
	return nil
}

// computeChecks derives the ratio checks of every N from the results.
func (r *Report) computeChecks() {
	r.Checks = nil
	for _, n := range r.Ns {
		g := r.find(n, "gpuctl")
		ratio := func(name, peer string, noop bool, bar float64) {
			p := r.find(n, peer)
			c := Check{N: n, Name: name, Bar: bar}
			if g == nil || p == nil {
				c.Absent = true
				c.Text = fmt.Sprintf("%s n/a", name)
				r.Checks = append(r.Checks, c)
				return
			}
			gs, ps := g.Full.Seconds, p.Full.Seconds
			if noop {
				gs, ps = g.NoOp.Seconds, p.NoOp.Seconds
			}
			c.Value = ps / gs
			c.Pass = c.Value >= bar
			c.Text = fmt.Sprintf("%s %s (bar %gx) %s", name, fmtRatio(c.Value), bar, passFail(c.Pass))
			r.Checks = append(r.Checks, c)
		}
		ratio("full flux/gpuctl", "flux", false, 2)
		ratio("full kubectl/gpuctl", "kubectl", false, 5)
		ratio("no-op flux/gpuctl", "flux", true, 10)
		c := Check{N: n, Name: "gpuctl no-op writes", Bar: 0}
		if g == nil {
			c.Absent, c.Text = true, "gpuctl no-op writes n/a"
		} else {
			c.Value = float64(g.NoOp.Writes)
			c.Pass = g.NoOp.Writes == 0
			c.Text = fmt.Sprintf("gpuctl no-op writes %d, dry-runs %d %s", g.NoOp.Writes, g.NoOp.DryRuns, passFail(c.Pass))
		}
		r.Checks = append(r.Checks, c)
		r.Checks = append(r.Checks, noopPlanCheck(n, g))
		r.Checks = append(r.Checks, floorCheck(n, g, r.find(n, "floor")))
	}
}

// floorBar is how much longer than the API server's floor gpuctl's full sync may take
// (issue #18, bar 3: at N = 1,000 and 5,000).
const floorBar = 1.2

// floorCheck is gpuctl's full sync against the floor engine's bare POSTs, measured in the same
// run on the same cluster.
func floorCheck(n int, g, f *Result) Check {
	c := Check{N: n, Name: "full gpuctl/floor", Bar: floorBar}
	if g == nil || f == nil || g.Full == nil || f.Full == nil {
		c.Absent, c.Text = true, "full gpuctl/floor n/a"
		return c
	}
	c.Value = g.Full.Seconds / f.Full.Seconds
	c.Pass = c.Value <= floorBar
	c.Text = fmt.Sprintf("full gpuctl/floor %s (gpuctl %s, bare POSTs %s; bar ≤ %gx) %s",
		fmtRatio(c.Value), fmtSecs(g.Full.Seconds), fmtSecs(f.Full.Seconds), floorBar, passFail(c.Pass))
	return c
}

// noopPlanBar is the bar of gpuctl's no-op plan (issue #18, bar 4: `gpuctl diff` of 1,000
// objects from a laptop), and noopPlanBefore the plan time at N=1000 before the protobuf list.
const (
	noopPlanBar    = 0.15
	noopPlanBefore = "0.37-0.53 s"
)

// noopPlanCheck is the time of gpuctl's Plan in its no-op pass against noopPlanBar, with its
// requests.
func noopPlanCheck(n int, g *Result) Check {
	c := Check{N: n, Name: "gpuctl no-op plan", Bar: noopPlanBar}
	if g == nil || g.NoOp == nil {
		c.Absent, c.Text = true, "gpuctl no-op plan n/a"
		return c
	}
	c.Value, c.Pass = g.NoOp.PlanSeconds, g.NoOp.PlanSeconds <= noopPlanBar
	c.Text = fmt.Sprintf("gpuctl no-op plan %.3fs (bar %gs; before %s at N=1000) in %d requests %s",
		c.Value, noopPlanBar, noopPlanBefore, g.NoOp.Requests, passFail(c.Pass))
	return c
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func fmtRatio(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0fx", x)
	}
	return fmt.Sprintf("%.1fx", x)
}

func fmtSecs(s float64) string {
	switch {
	case s < 1:
		return fmt.Sprintf("%.3fs", s)
	case s < 100:
		return fmt.Sprintf("%.2fs", s)
	default:
		return fmt.Sprintf("%.0fs", s)
	}
}

func fmtCPU(s float64) string { return fmt.Sprintf("%.1f", s) }

func round(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	default:
		return d.Round(10 * time.Millisecond)
	}
}

// writeTable prints the result table, the ratio lines and the cost per object.
func (r *Report) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tengine\tfull\tno-op\twrites(full/no-op)\tdry-runs(full/no-op)\trequests(full/no-op)\tapiserver+etcd cpu s(full/no-op)\tclient cpu s(full/no-op)\tother procs cpu s(full/no-op)")
	for _, res := range r.Results {
		if res.Error != "" || res.Full == nil || res.NoOp == nil {
			fmt.Fprintf(tw, "%d\t%s\tERROR: %s\n", res.N, res.Engine, res.Error)
			continue
		}
		f, o := res.Full, res.NoOp
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%d/%d\t%d/%d\t%s/%s\t%s/%s\t%s/%s\n", res.N, res.Engine,
			fmtSecs(f.Seconds), fmtSecs(o.Seconds), f.Writes, o.Writes, f.DryRuns, o.DryRuns,
			f.Requests, o.Requests, fmtCPU(f.ServerCPU), fmtCPU(o.ServerCPU), fmtCPU(f.ClientCPU), fmtCPU(o.ClientCPU),
			fmtCPU(f.OtherCPU), fmtCPU(o.OtherCPU))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, n := range r.Ns {
		var parts []string
		for _, c := range r.Checks {
			if c.N == n {
				parts = append(parts, c.Text)
			}
		}
		fmt.Fprintf(w, "ratios N=%d: %s\n", n, strings.Join(parts, ", "))
	}
	if len(r.Ns) > 1 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "cost per object (growth with N):")
		for _, e := range r.Engines {
			var full, noop []string
			for _, n := range r.Ns {
				if res := r.find(n, e); res != nil {
					full = append(full, fmt.Sprintf("N=%d %s", n, perObject(res.Full.Seconds, n)))
					noop = append(noop, fmt.Sprintf("N=%d %s", n, perObject(res.NoOp.Seconds, n)))
				}
			}
			if len(full) > 0 {
				fmt.Fprintf(w, "  %-8s full:  %s\n", e, strings.Join(full, ", "))
				fmt.Fprintf(w, "  %-8s no-op: %s\n", e, strings.Join(noop, ", "))
			}
		}
	}
	var diag []string
	for _, res := range r.Results {
		if d := res.ListDiagnosis; d != nil {
			for _, v := range d.Variants {
				diag = append(diag, fmt.Sprintf("  N=%d\t%s\t%s\t%.1f MB\theaders %s\tbody %s\tdecode %s", res.N, v.Name,
					round(v.total()), float64(v.Bytes)/1e6, round(v.Headers), round(v.Body), round(v.Decode)))
			}
		}
	}
	if len(diag) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "gpuctl no-op: its list of the inventory's Jobs, repeated untimed in each encoding (-diagnose):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, l := range diag {
			fmt.Fprintln(tw, l)
		}
		tw.Flush()
	}
	if len(r.Notes) > 0 || r.Gpuctl != "" {
		fmt.Fprintln(w)
		if r.Gpuctl != "" {
			fmt.Fprintln(w, "note: gpuctl measured at "+r.Gpuctl)
		}
		for _, n := range r.Notes {
			fmt.Fprintln(w, "note: "+n)
		}
	}
	var failed []string
	for _, c := range r.Checks {
		if !c.Absent && !c.Pass {
			failed = append(failed, fmt.Sprintf("N=%d %s", c.N, c.Name))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nFAIL: bars missed: %s\n", strings.Join(failed, "; "))
	}
}

func perObject(seconds float64, n int) string {
	us := seconds / float64(n) * 1e6
	if us >= 1000 {
		return fmt.Sprintf("%.2fms", us/1000)
	}
	return fmt.Sprintf("%.1fµs", us)
}

func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
