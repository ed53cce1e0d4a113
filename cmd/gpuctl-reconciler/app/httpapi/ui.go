package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed" // the stylesheet
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	g "maragu.dev/gomponents"
	h "maragu.dev/gomponents/html"
)

// The web page: server-rendered HTML documents (the overview at /, a page per job at
// /jobs/{jobId}), their stylesheet inlined, no script and no other asset, so that they work
// offline and under a strict Content-Security-Policy. Their HTML is built in ui_html.go.

// uiCSS is the pages' stylesheet, inlined in their head.
//
//go:embed ui/style.css
var uiCSS string

// uiCSP allows the inline stylesheet (by its digest) and nothing else: no script, no frame, no
// request; the favicon is an empty data: URL.
var uiCSP = func() string {
	sum := sha256.Sum256([]byte(uiCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

// Limits of the page.
const (
	uiHistoryRows  = 50  // history entries shown, newest first
	uiJobRows      = 200 // jobs listed on the overview, by namespace and name
	uiStatusErrors = 5   // sync errors shown
	uiRefresh      = 30  // seconds between reloads
)

// Geometry of the bar charts (SVG user units = CSS pixels).
const (
	chartLabelW = 128 // team or pool names, right-aligned before the track
	chartTrackX = chartLabelW + 10
	chartTrackW = 280
	chartValueX = chartTrackX + chartTrackW + 10
	chartWidth  = chartValueX + 106
	chartName   = 17 // runes of a name shown; the row's title has it whole
	chartRowH   = 36
	chartBarH   = 20
	chartPadY   = 8
)

// uiFrame is what every page shows around its sections: the head and the top bar.
type uiFrame struct {
	Title   string
	Now     time.Time
	User    string
	Refresh int
	// Cluster is the daemon's cluster (Options.Cluster), shown beside the name; "" none.
	Cluster string
}

// uiPage is what the overview renders. Each section has its own error: a failed data source
// shows its error in its section and the rest of the page still renders.
type uiPage struct {
	Frame  uiFrame
	Status uiStatus
	Jobs   uiJobs
	Drift  uiDrift
	Quotas uiChart
	Pools  uiChart
	// PoolUsage is the GPU utilization of each pool (ui_chart.go).
	PoolUsage uiUsage
}

// uiJobs is the overview's list of jobs, each linked to its page.
type uiJobs struct {
	Err   string
	Total int
	Items []cluster.JobSummary
	More  int // jobs not listed
}

type uiStatus struct {
	Err         string
	St          daemon.Status
	ResultClass string
	Applied     string
	Attempted   string // the revision of the last attempt when it is not the applied one
	Errors      []string
	MoreErrors  int
}

type uiDrift struct {
	Err         string
	Summary     string
	Revision    string // the report's revision, short (its title has it whole)
	Clean       bool
	Report      drift.Report
	Items       []uiItem
	History     []uiEntry
	OlderHidden int
}

type uiItem struct {
	Category   string
	Object     string
	Source     string
	Manager    string
	Inferred   bool
	When       time.Time
	Message    string
	Fields     []string
	GPUs       int64
	Correction string
	Error      string
}

type uiEntry struct {
	Time     time.Time
	Change   string
	Reason   string // why a resolved item resolved
	Category string
	Object   string
	Manager  string
	Message  string
}

// uiChart is a horizontal bar chart: per row, a track (the limit) and a bar (the use).
type uiChart struct {
	Err    string
	Note   string
	Width  int
	Height int
	Rows   []uiBar
}

type uiBar struct {
	Name    string
	Short   string // Name cut to chartName runes
	Title   string
	Used    int64
	Limit   int64
	Over    bool
	Y       int // top of the row
	BarY    int
	TextY   int
	TrackW  int
	BarW    string // a decimal: proportional to Used/Limit
	Label   string
	LabelX  int
	ValueX  int
	TrackX  int
	BarH    int
	Percent string
}

// authenticatePage is authenticate for the web page: browsers cannot send a bearer token, so
// it also accepts HTTP Basic authentication whose password is a token (any user name), and it
// answers 401 with a Basic challenge so that the browser asks for it; 429 as authenticate.
func (s *server) authenticatePage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			_, token, ok = r.BasicAuth()
		}
		p, known := s.lookup(token)
		if !known {
			w.Header().Set("WWW-Authenticate", `Basic realm="gpuctl"`)
			msg := "401 unauthorized: sign in with any user name and a gpuctl API token as the password"
			if ok {
				msg = "401 unauthorized: unknown token"
			}
			writeText(w, http.StatusUnauthorized, msg)
			return
		}
		if s.overRate(w, token, p, true) {
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// frame is the frame of a page of that title, for the signed-in principal.
func (s *server) frame(ctx context.Context, title string, now time.Time) uiFrame {
	f := uiFrame{Title: title, Now: now, Refresh: uiRefresh, Cluster: s.opts.Cluster}
	if p, ok := PrincipalFrom(ctx); ok {
		f.User = p.Name
	}
	return f
}

// site is the name that ends each page's title: "gpuctl", after the cluster's name when the
// daemon has one ("gpu-a · gpuctl"), so that the tabs of two clusters' pages differ.
func (s *server) site() string {
	if s.opts.Cluster == "" {
		return "gpuctl"
	}
	return s.opts.Cluster + " · gpuctl"
}

// getPage serves GET / and GET /index.html: the read-only overview.
func (s *server) getPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := time.Now()
	page := uiPage{Frame: s.frame(ctx, s.site(), now)}
	var wg sync.WaitGroup
	wg.Go(func() { page.Status = s.uiStatus(ctx) })
	wg.Go(func() { page.Jobs = s.uiJobs(ctx) })
	wg.Go(func() { page.Drift = s.uiDrift(ctx, now) })
	wg.Go(func() { page.Quotas = s.uiQuotas(ctx) })
	wg.Go(func() { page.Pools = s.uiPools(ctx) })
	wg.Go(func() { page.PoolUsage = s.uiPoolUsage(ctx) })
	wg.Wait()
	if page.Drift.Err == "" {
		page.Frame.Title += " · " + page.Drift.Summary
	}
	s.writePage(w, http.StatusOK, overviewDoc(page))
}

// writePage renders a page with the headers of every page.
func (s *server) writePage(w http.ResponseWriter, code int, page g.Node) {
	var buf bytes.Buffer
	if err := page.Render(&buf); err != nil {
		s.log.Error("web page", "err", err)
		writeText(w, http.StatusInternalServerError, "500 internal error: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// sectionError logs a section's failure and returns its text for the page.
func (s *server) sectionError(section string, err error) string {
	s.log.Warn("web page: section failed", "section", section, "err", err)
	return err.Error()
}

func (s *server) uiStatus(ctx context.Context) uiStatus {
	st, err := s.status(ctx)
	if err != nil {
		return uiStatus{Err: s.sectionError("status", err)}
	}
	out := uiStatus{St: st, ResultClass: resultClass(st.Result), Applied: humanize.Revision(st.AppliedRevision)}
	if st.Revision != "" && st.Revision != st.AppliedRevision {
		out.Attempted = humanize.Revision(st.Revision)
	}
	out.Errors = st.Errors
	if len(out.Errors) > uiStatusErrors {
		out.Errors, out.MoreErrors = out.Errors[:uiStatusErrors], len(out.Errors)-uiStatusErrors
	}
	return out
}

func resultClass(r daemon.Result) string {
	switch r {
	case daemon.ResultSucceeded:
		return "ok"
	case daemon.ResultFailed, daemon.ResultInvalid:
		return "bad"
	case daemon.ResultRefused, daemon.ResultFetchFailed:
		return "warn"
	}
	return "neutral"
}

func (s *server) uiJobs(ctx context.Context) uiJobs {
	rd, err := s.model(ctx)
	if err != nil {
		return uiJobs{Err: s.sectionError("jobs", err)}
	}
	list, err := rd.Jobs(ctx, cluster.JobFilter{Page: cluster.Page{Number: 1, Size: uiJobRows}})
	if err != nil {
		return uiJobs{Err: s.sectionError("jobs", err)}
	}
	return uiJobs{Total: list.Total, Items: list.Items, More: list.Total - len(list.Items)}
}

func (s *server) uiDrift(ctx context.Context, now time.Time) uiDrift {
	rep, err := s.drift(ctx, defaultDriftSince, now)
	if err != nil {
		return uiDrift{Err: s.sectionError("drift", err)}
	}
	out := uiDrift{Summary: rep.Summary(), Report: rep, Revision: humanize.Revision(rep.Revision),
		Clean: len(rep.Items) == 0 && rep.Truncated == 0}
	for _, it := range rep.Items {
		ui := uiItem{Category: string(it.Category), Object: it.Object.String(), Source: it.Source,
			Manager: it.Manager, Message: it.Message, GPUs: it.GPUs, Correction: it.Correction, Error: it.Error,
			When: it.Detected}
		if it.Changed != nil {
			ui.When = *it.Changed
		}
		for _, f := range it.Fields {
			ui.Fields = append(ui.Fields, f.String()) // as the text report prints it
		}
		// The item's manager is its first field's: inferred when that field was removed.
		ui.Inferred = len(it.Fields) > 0 && it.Fields[0].Inferred && it.Fields[0].Manager == it.Manager
		out.Items = append(out.Items, ui)
	}
	hist := slices.Clone(rep.History)
	slices.Reverse(hist)
	if len(hist) > uiHistoryRows {
		hist, out.OlderHidden = hist[:uiHistoryRows], len(hist)-uiHistoryRows
	}
	for _, e := range hist {
		out.History = append(out.History, uiEntry{Time: e.Time, Change: string(e.Change), Reason: e.Reason,
			Category: string(e.Item.Category), Object: e.Item.Object.String(), Manager: e.Item.Manager,
			Message: e.Item.Message})
	}
	return out
}

func (s *server) uiQuotas(ctx context.Context) uiChart {
	qs, err := s.quotas(ctx)
	if err != nil {
		return uiChart{Err: s.sectionError("quotas", err)}
	}
	perNamespace := map[string]int{}
	for _, q := range qs {
		perNamespace[q.Namespace]++
	}
	var rows []uiBar
	noGPU := 0
	for _, q := range qs {
		if q.Hard.GPU == nil {
			noGPU++
			continue
		}
		if q.Queue != nil { // a ClusterQueue: a bar per pool, of its nominal quota there
			for _, p := range q.Queue.Pools {
				if p.Nominal.GPU != nil {
					rows = append(rows, uiBar{Name: q.User + "/" + p.Pool, Title: "ClusterQueue " + q.Queue.ClusterQueue + ", pool " + p.Pool,
						Used: *p.Used.GPU, Limit: *p.Nominal.GPU})
				}
			}
			continue
		}
		name := q.User
		if perNamespace[q.Namespace] > 1 {
			name += "/" + q.Name
		}
		rows = append(rows, uiBar{Name: name, Title: "ResourceQuota " + q.Namespace + "/" + q.Name,
			Used: *q.Used.GPU, Limit: *q.Hard.GPU})
	}
	c := newChart(rows)
	switch {
	case len(qs) == 0:
		c.Note = "No gpuctl quotas in the cluster."
	case noGPU > 0:
		c.Note = humanize.Plural(noGPU, "quota") + " without a GPU limit not shown."
	}
	return c
}

func (s *server) uiPools(ctx context.Context) uiChart {
	ps, err := s.poolSummaries(ctx)
	if err != nil {
		return uiChart{Err: s.sectionError("pools", err)}
	}
	var rows []uiBar
	var empty []string
	for _, p := range ps {
		if p.NodeCount == 0 && p.GPUUsed == 0 {
			empty = append(empty, p.Name) // nothing to draw: no nodes and nothing running
			continue
		}
		title := p.Name
		if p.Description != "" {
			title += ": " + p.Description
		}
		if len(p.GPUType) > 0 {
			title += " (" + strings.Join(p.GPUType, ", ") + ")"
		}
		rows = append(rows, uiBar{Name: p.Name, Title: title, Used: p.GPUUsed, Limit: p.GPUTotal})
	}
	c := newChart(rows)
	switch {
	case len(ps) == 0:
		c.Note = "No pools and no nodes."
	case len(empty) > 0:
		c.Note = humanize.Plural(len(empty), "pool") + " without nodes not shown: " + strings.Join(empty, ", ") + "."
	}
	return c
}

// newChart lays out the bars. A bar is red when the use reaches the limit (a limit of 0 only
// when something is used), and never drawn longer than its track.
func newChart(rows []uiBar) uiChart {
	c := uiChart{Width: chartWidth, Height: 2*chartPadY + len(rows)*chartRowH}
	for i, r := range rows {
		r.Y = chartPadY + i*chartRowH
		r.BarY = r.Y + (chartRowH-chartBarH)/2
		r.TextY = r.BarY + chartBarH/2 + 5
		r.BarH = chartBarH
		r.LabelX, r.TrackX, r.TrackW, r.ValueX = chartLabelW, chartTrackX, chartTrackW, chartValueX
		frac := 0.0
		switch {
		case r.Limit > 0:
			frac = min(1, float64(r.Used)/float64(r.Limit))
			r.Over = r.Used >= r.Limit
			r.Percent = fmt.Sprintf("%.0f%%", 100*float64(r.Used)/float64(r.Limit))
		case r.Used > 0:
			frac, r.Over = 1, true
		}
		r.BarW = fmt.Sprintf("%.2f", frac*chartTrackW)
		r.Short = r.Name
		if n := []rune(r.Name); len(n) > chartName {
			r.Short = string(n[:chartName-1]) + "…"
		}
		r.Label = fmt.Sprintf("%d / %s", r.Used, humanize.Plural(r.Limit, "GPU"))
		c.Rows = append(c.Rows, r)
	}
	return c
}

// uiStamp formats a time for the page, in UTC ("never" for the zero time).
func uiStamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// uiWhen is a <time> element that shows how long ago t was (37s ago, 5m ago, as kubectl
// prints ages), with the date as its title.
func uiWhen(now, t time.Time) g.Node {
	if t.IsZero() {
		return muted("never")
	}
	return h.Time(h.DateTime(t.UTC().Format(time.RFC3339)), h.Title(uiStamp(t)), g.Text(humanize.Age(now.Sub(t))+" ago"))
}
