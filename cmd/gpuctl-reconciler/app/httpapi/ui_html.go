package httpapi

import (
	"cmp"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	g "maragu.dev/gomponents"
	h "maragu.dev/gomponents/html"
)

// The pages' HTML, built as gomponents nodes: the overview, the job page and the parts they
// share. g.Text and the attribute nodes escape what they are given, so every value from the
// cluster, from Git or from a user goes through them; only constant markup and the stylesheet
// are written raw; a job's id in a link is escaped for a URL path. html/template is not used on purpose: its executor looks methods
// up by name at run time, so the linker keeps every exported method of every type in the
// binary, 40 MB more of it and some 20 MiB more of the daemon's memory (see
// TestNoTemplateExecutor in cmd/gpuctl-reconciler).

// uiNone is what a page shows for a missing value.
const uiNone = "—"

// overviewDoc is the overview, GET /.
func overviewDoc(p uiPage) g.Node {
	return document(p.Frame, g.Group{
		syncSection(p.Frame.Now, p.Status),
		jobsSection(p.Frame.Now, p.Jobs),
		driftSection(p.Frame.Now, p.Drift),
		h.Div(h.Class("two-col"),
			section("quotas", g.Group{h.H2(g.Text("GPU quotas per team"))},
				chart(p.Quotas, "quota-chart", "GPUs requested vs quota per team", "quota")),
			section("pools", g.Group{h.H2(g.Text("GPUs per pool"))},
				chart(p.Pools, "pool-chart", "GPUs used vs allocatable per pool", "allocatable")),
		),
		usageSection("pool-usage", "GPU utilization per pool", p.PoolUsage),
	}, "Change jobs, pools and quotas by committing to Git. ",
		"/api/v1/status", "/api/v1/jobs", "/api/v1/drift", "/api/v1/quotas", "/api/v1/pools")
}

// jobDoc is the page of a job, GET /jobs/{jobId}.
func jobDoc(p uiJobPage) g.Node {
	content := g.Group{h.P(h.Class("crumbs small"), h.A(h.Href("/"), g.Text("← all jobs")))}
	if p.Err != "" {
		content = append(content, section("job", g.Group{h.H2(h.Code(g.Text(p.ID)))},
			errorBox("Job unavailable:", p.Err)))
	} else {
		content = append(content, jobSection(p.Frame.Now, p.Job), podsSection(p.Pods),
			usageSection("usage", "GPU usage", p.Usage),
			attemptsSection(p.Frame.Now, p.Job.Attempts),
			eventsSection(p.Frame.Now, p.ID, p.Events), logsSection(p.ID, p.Logs))
	}
	api := "/api/v1/jobs/" + p.ID
	return document(p.Frame, content, "", api, api+"/events", api+"/logs", api+"/metrics")
}

// document is a whole page: its head and top bar, its content as the main element, and a
// footer that says the page is read-only (then intro) and names the API routes of its data.
func document(f uiFrame, content g.Group, intro string, routes ...string) g.Node {
	footer := g.Group{g.Text("Read-only view of gpuctl-reconciler. " + intro + "JSON: ")}
	for i, r := range routes {
		if i > 0 {
			footer = append(footer, g.Text(", "))
		}
		footer = append(footer, h.Code(g.Text(r)))
	}
	return g.Group{
		g.Raw("<!DOCTYPE html>\n"),
		h.HTML(h.Lang("en"),
			h.Head(
				h.Meta(h.Charset("utf-8")),
				h.Meta(h.Name("viewport"), h.Content("width=device-width, initial-scale=1")),
				h.Meta(g.Attr("http-equiv", "refresh"), h.Content(strconv.Itoa(f.Refresh))),
				h.Meta(h.Name("robots"), h.Content("noindex")),
				h.TitleEl(g.Text(f.Title)),
				h.Link(h.Rel("icon"), h.Href("data:,")),
				h.StyleEl(g.Raw(uiCSS)), // its digest is in uiCSP: byte for byte
			),
			h.Body(
				topBar(f),
				h.Main(h.Class("wrap"), content),
				h.Footer(h.Class("wrap footer"), footer, g.Text(".")),
			),
		),
	}
}

// topBar is the bar at the top of every page: the name (and the cluster's), when the page was
// made and by whom.
func topBar(f uiFrame) g.Node {
	meta := g.Group{g.Text("Updated " + uiStamp(f.Now) + " · refreshes every " + strconv.Itoa(f.Refresh) + " s")}
	if f.User != "" {
		meta = append(meta, g.Text(" · signed in as "), h.B(g.Text(f.User)))
	}
	return h.Header(h.Class("topbar"),
		h.Div(h.Class("wrap topbar-inner"),
			h.Div(h.Class("brand"), h.A(h.Class("logo"), h.Href("/"), g.Text("gpuctl")),
				g.If(f.Cluster != "", h.Span(h.ID("cluster"), h.Class("badge badge-neutral"), h.Title("the cluster of this gpuctl-reconciler (--cluster)"),
					g.Text("cluster "+f.Cluster))),
				h.Span(h.Class("tagline"), g.Text("GitOps for GPU workloads"))),
			h.Div(h.Class("topmeta"), meta),
		),
	)
}

func syncSection(now time.Time, s uiStatus) g.Node {
	head := g.Group{h.H2(g.Text("Sync status"))}
	if s.Err != "" {
		return section("sync", head, errorBox("Status unavailable:", s.Err))
	}
	head = append(head, h.Span(h.ID("sync-result"), h.Class("badge badge-"+s.ResultClass),
		g.Text(cmp.Or(string(s.St.Result), "Unknown"))))
	applied := muted("none yet")
	if s.Applied != "" {
		applied = h.Code(h.Title(s.St.AppliedRevision), g.Text(s.Applied))
	}
	facts := h.Dl(h.Class("facts"),
		fact("Source", h.Code(g.Text(cmp.Or(s.St.Source, uiNone)))),
		fact("Applied revision", applied, g.If(s.Attempted != "", g.Group{g.Text(" "),
			h.Span(h.Class("muted"), g.Text("(last attempt: "), h.Code(h.Title(s.St.Revision), g.Text(s.Attempted)), g.Text(")"))})),
		fact("Last attempt", uiWhen(now, s.St.LastAttempt), g.If(s.St.Duration != 0, g.Group{g.Text(" "),
			muted("· took " + humanize.Duration(s.St.Duration))})),
		fact("Last success", uiWhen(now, s.St.LastSuccess)),
		apiServerFact(s.St.APIServer),
		g.If(!s.St.FetchingSince.IsZero(), wideFact("Fetching", "for "+humanize.Age(now.Sub(s.St.FetchingSince))+": the source has not answered yet")),
		applyingFact(s.St.Applying),
		wideFact("Summary", cmp.Or(s.St.Summary, uiNone)),
		g.If(s.St.Message != "", wideFact("Message", s.St.Message)),
		g.If(s.St.RevisionMessage != "", wideFact("Commit", s.St.RevisionMessage)),
	)
	var errs g.Node
	if len(s.Errors) > 0 {
		errs = h.Div(h.Class("error-box"),
			h.B(g.Text("Errors of the last attempt")),
			h.Ul(h.Class("errors"), g.Map(s.Errors, func(e string) g.Node { return h.Li(h.Code(g.Text(e))) })),
			g.If(s.MoreErrors > 0, h.P(h.Class("muted"),
				g.Text("… and "+strconv.Itoa(s.MoreErrors)+" more (GET /api/v1/status lists them all)"))),
		)
	}
	var held g.Node
	if len(s.St.Held) > 0 {
		held = h.Div(h.Class("error-box"),
			h.B(g.Text("Held: these namespaces' files have errors; each keeps the revision it is held at, the others apply")),
			h.Ul(h.Class("errors"), g.Map(s.St.Held, func(hs daemon.HeldScope) g.Node { return h.Li(h.Code(g.Text(hs.String()))) })),
		)
	}
	return section("sync", head, facts, errs, held)
}

// apiServerFact is the outage of the API server that the daemon sees (daemon.Status.APIServer);
// nil when none.
func apiServerFact(u *daemon.Unreachable) g.Node {
	if u == nil {
		return nil
	}
	return wideFact("API server", u.String()+"; nothing is synced or recorded until it answers, then a sync starts at once")
}

// applyingFact is the apply that has begun and not ended (daemon.Status.Applying): in
// progress, or interrupted; nil when none.
func applyingFact(a *daemon.Applying) g.Node {
	if a == nil {
		return nil
	}
	return wideFact("Applying", a.String()+": not ended; if the daemon stopped meanwhile, its next sync applies in full")
}

func jobsSection(now time.Time, j uiJobs) g.Node {
	head := g.Group{h.H2(g.Text("Jobs"))}
	if j.Err != "" {
		return section("jobs", head, errorBox("Jobs unavailable:", j.Err))
	}
	head = append(head, h.Span(h.Class("badge badge-neutral"), g.Text(humanize.Plural(j.Total, "job"))))
	if len(j.Items) == 0 {
		return section("jobs", head, mutedP("No gpuctl jobs in the cluster."))
	}
	rows := g.Map(j.Items, func(job cluster.JobSummary) g.Node {
		return h.Tr(h.Class("job-row"), h.Data("job", job.JobID),
			h.Td(h.A(h.Class("job-link"), h.Href("/jobs/"+url.PathEscape(job.JobID)), g.Text(job.Name))),
			h.Td(g.Text(job.Namespace)),
			h.Td(g.Text(job.Kind)),
			h.Td(statusBadge(job.Status)),
			h.Td(h.Class("job-queue"), queueCell(job.Queue)),
			h.Td(h.Class("num"), g.Text(strconv.FormatInt(job.GPU, 10))),
			h.Td(g.Text(job.Pool)),
			h.Td(h.Class("nowrap"), whenOr(now, job.StartedAt, dash())),
		)
	})
	return section("jobs", head,
		table("job-list", "grid compact", []string{"Job", "Namespace", "Kind", "Status", "Queue", "GPUs", "Pool", "Started"}, rows),
		g.If(j.More > 0, smallNote("… and "+humanize.Plural(j.More, "more job")+" not listed (GET /api/v1/jobs lists them all).")),
	)
}

// queueCell is a job's queue in the list: its ClusterQueue and, while it waits, its place;
// the title says the state in words.
func queueCell(q *cluster.QueueState) g.Node {
	if q == nil {
		return dash()
	}
	place := q.ClusterQueue
	if q.Waiting() {
		place += " #" + strconv.Itoa(q.Position)
	}
	return h.Span(h.Title(q.Summary()), g.Text(place))
}

func driftSection(now time.Time, d uiDrift) g.Node {
	head := g.Group{h.H2(g.Text("Drift"))}
	if d.Err != "" {
		return section("drift", head, errorBox("Drift unavailable:", d.Err))
	}
	if d.Report.Mode != "" {
		head = append(head, h.Span(h.Class("badge badge-neutral"), h.Title("drift mode"), g.Text("mode: "+string(d.Report.Mode))))
	}
	summaryClass := "summary summary-bad"
	if d.Clean {
		summaryClass = "summary summary-ok"
	}
	var compared g.Node
	if d.Revision != "" {
		compared = g.Group{g.Text("Compared with "), h.Code(h.ID("drift-revision"), h.Title(d.Report.Revision), g.Text(d.Revision)), g.Text(" · ")}
	}
	generated := g.Text("report not generated yet")
	if !d.Report.Generated.IsZero() {
		generated = g.Group{g.Text("report generated "), uiWhen(now, d.Report.Generated)}
	}
	var items g.Node = h.Div(h.ID("no-drift"), h.Class("ok-box"), g.Text("✓ No drift: the cluster matches Git."))
	if !d.Clean {
		items = g.Group{
			table("drift-items", "grid", []string{"Category", "Object", "Who", "When", "What differs", "Correction"},
				g.Map(d.Items, func(it uiItem) g.Node { return driftRow(now, it) })),
			g.If(d.Report.Truncated > 0, mutedP("… and "+humanize.Plural(d.Report.Truncated, "more item")+" not listed.")),
		}
	}
	history := mutedP("No changes in the last 24 hours.")
	if len(d.History) > 0 {
		history = g.Group{
			table("drift-history", "grid compact", []string{"When", "Change", "Category", "Object", "Who", "Detail"},
				g.Map(d.History, func(e uiEntry) g.Node { return historyRow(now, e) })),
			g.If(d.OlderHidden > 0, smallNote(humanize.Plural(d.OlderHidden, "older entry", "older entries")+
				" of the last 24 h not shown (GET /api/v1/drift lists them).")),
		}
	}
	return section("drift", head,
		h.P(h.ID("drift-summary"), h.Class(summaryClass), g.Text(d.Summary)),
		h.P(h.Class("muted small"), compared, generated),
		items,
		h.H3(g.Text("Recent changes "), h.Span(h.Class("muted small"), g.Text("last 24 h, newest first"))),
		history,
	)
}

// driftRow is a drift item: what, who, when, which fields differ and its correction.
func driftRow(now time.Time, it uiItem) g.Node {
	var who g.Node = muted("unknown")
	if it.Manager != "" {
		who = g.Group{h.Code(g.Text(it.Manager)), g.If(it.Inferred, g.Group{g.Text(" "),
			h.Span(h.Class("muted small"), h.Title("the field was removed: the latest other writer"), g.Text("(inferred)"))})}
	}
	var fields g.Node
	if len(it.Fields) > 0 {
		fields = h.Ul(h.Class("fields"), g.Map(it.Fields, func(f string) g.Node { return h.Li(h.Code(g.Text(f))) }))
	}
	return h.Tr(h.Class("drift-row"), h.Data("category", it.Category),
		h.Td(categoryBadge(it.Category)),
		h.Td(h.Code(h.Class("object"), g.Text(it.Object)), g.If(it.Source != "", h.Div(h.Class("muted small"), g.Text(it.Source)))),
		h.Td(h.Class("who"), who),
		h.Td(h.Class("nowrap"), uiWhen(now, it.When)),
		h.Td(h.Class("diff"),
			h.Div(g.Text(it.Message), g.If(it.GPUs != 0, g.Group{g.Text(" "),
				h.Span(h.Class("badge badge-bad"), g.Text(humanize.Plural(it.GPUs, "GPU")))})),
			fields,
		),
		h.Td(textOrDash(it.Correction), g.If(it.Error != "", h.Div(h.Class("error-text"), g.Text("failed: "+it.Error)))),
	)
}

// historyRow is an entry of the drift history: when an item was detected or resolved, and why.
func historyRow(now time.Time, e uiEntry) g.Node {
	return h.Tr(h.Class("history-row"),
		h.Td(h.Class("nowrap"), uiWhen(now, e.Time)),
		h.Td(h.Span(h.Class("badge change-"+e.Change), g.Text(e.Change)),
			g.If(e.Reason != "", g.Group{g.Text(" "), h.Span(h.Class("reason"), g.Text(e.Reason))})),
		h.Td(categoryBadge(e.Category)),
		h.Td(h.Code(h.Class("object"), g.Text(e.Object))),
		h.Td(codeOrDash(e.Manager)),
		h.Td(g.Text(e.Message)),
	)
}

func categoryBadge(category string) g.Node {
	return h.Span(h.Class("badge cat-"+category), g.Text(category))
}

// chart is a bar chart (an SVG image of that id and label) with its legend, whose limit is
// called legend, and its note; or the error that left it empty.
func chart(c uiChart, id, label, legend string) g.Node {
	if c.Err != "" {
		return errorBox("Unavailable:", c.Err)
	}
	var svg g.Node
	if len(c.Rows) > 0 {
		width, height := strconv.Itoa(c.Width), strconv.Itoa(c.Height)
		svg = g.Group{
			g.El("svg", h.ID(id), h.Class("chart"), h.Role("img"), h.Aria("label", label), h.Width(width), h.Height(height),
				g.Attr("viewBox", "0 0 "+width+" "+height), g.Attr("xmlns", "http://www.w3.org/2000/svg"),
				g.Map(c.Rows, chartRow)),
			h.P(h.Class("legend"), h.Span(h.Class("key key-bar")), g.Text(" requested "), h.Span(h.Class("key key-track")),
				g.Text(" "+legend+" "), h.Span(h.Class("key key-over")), g.Text(" at or over "+legend)),
		}
	}
	return g.Group{svg, g.If(c.Note != "", mutedP(c.Note))}
}

// chartRow is a row of a bar chart: the name, the track of the limit, the bar of the use and
// its numbers; its title has the whole name.
func chartRow(b uiBar) g.Node {
	class := "row"
	if b.Over {
		class += " over"
	}
	title := b.Title + ": " + b.Label
	if b.Percent != "" {
		title += " (" + b.Percent + ")"
	}
	x, barY, barH := strconv.Itoa(b.TrackX), strconv.Itoa(b.BarY), strconv.Itoa(b.BarH)
	return g.El("g", h.Class(class), h.Data("name", b.Name), h.Data("used", strconv.FormatInt(b.Used, 10)),
		h.Data("limit", strconv.FormatInt(b.Limit, 10)),
		g.El("title", g.Text(title)),
		g.El("text", h.Class("name"), g.Attr("x", strconv.Itoa(b.LabelX)), g.Attr("y", strconv.Itoa(b.TextY)),
			g.Attr("text-anchor", "end"), g.Text(b.Short)),
		g.El("rect", h.Class("track"), g.Attr("x", x), g.Attr("y", barY), h.Width(strconv.Itoa(b.TrackW)), h.Height(barH), g.Attr("rx", "4")),
		g.El("rect", h.Class("bar"), g.Attr("x", x), g.Attr("y", barY), h.Width(b.BarW), h.Height(barH), g.Attr("rx", "4")),
		g.El("text", h.Class("value"), g.Attr("x", strconv.Itoa(b.ValueX)), g.Attr("y", strconv.Itoa(b.TextY)), g.Text(b.Label)),
	)
}

func jobSection(now time.Time, j cluster.JobDetail) g.Node {
	r := j.Resources
	gpus := g.Group{g.Text(humanize.Plural(r.GPUTotal, "GPU"))}
	if r.Pods > 1 {
		gpus = append(gpus, g.Text(" "), muted("("+strconv.Itoa(int(r.Pods))+" pods × "+strconv.FormatInt(r.GPU, 10)+")"))
	}
	if r.GPUType != "" {
		gpus = append(gpus, g.Text(" · "+r.GPUType))
	}
	return section("job", g.Group{
		h.H2(h.ID("job-name"), g.Text(j.Name)),
		muted(j.Namespace + " · " + j.Kind),
		h.Span(h.ID("job-status"), statusBadge(j.Status)),
	},
		g.If(j.Description != "", h.P(g.Text(j.Description))),
		h.Dl(h.Class("facts"),
			g.If(j.Reason != "", h.Div(h.ID("job-reason"), h.Dt(g.Text("Why")), h.Dd(g.Text(j.Reason)))),
			fact("Job ID", h.Code(g.Text(j.JobID))),
			fact("Declared in", codeOrDash(j.Source)),
			fact("GPUs", gpus),
			fact("Pool", g.Text(j.Pool), g.If(j.Priority != "", g.Group{g.Text(" "), muted("· priority " + j.Priority)})),
			fact("Per pod", g.Text(strconv.FormatFloat(r.CPU, 'g', -1, 64)+" CPU · "+r.Memory+" memory")),
			queueFact(j.Queue),
			multiKueueFact(j.Queue),
			fact("Object", h.Code(g.Text(j.K8sResources.Kind+"/"+j.K8sResources.JobName))),
			fact("Created", uiWhen(now, j.CreatedAt)),
			fact("Started", whenOr(now, j.StartedAt, muted("not yet"))),
		),
	)
}

// queueFact is the job's place in Kueue's queue, and why it waits or was preempted; nil when
// Kueue does not queue it.
func queueFact(q *cluster.QueueState) g.Node {
	if q == nil {
		return nil
	}
	dd := g.Group{g.Text(q.State + " in "), h.Code(g.Text(q.ClusterQueue))}
	if q.Waiting() {
		dd = append(dd, g.Text(" · #"+strconv.Itoa(q.Position)+" of "+strconv.Itoa(q.Pending)))
	}
	dd = append(dd, g.Text(" "), muted("· priority "+strconv.Itoa(int(q.Priority))))
	line := func(class, text string) g.Node { return g.Group{h.Br(), h.Span(h.Class(class), g.Text(text))} }
	if w := q.WaitText(); w != "" {
		dd = append(dd, line("small", "waits for "+w))
	}
	if q.State == cluster.QueuePreempted {
		dd = append(dd, line("small", "preempted "+q.PreemptedBy.String()))
	}
	if len(q.Flavors) > 0 {
		dd = append(dd, line("small", "admitted to "+strings.Join(q.Flavors, ", ")))
	}
	if q.Message != "" {
		dd = append(dd, line("small muted", "Kueue: "+q.Message))
	}
	return h.Div(h.ID("job-queue"), h.Dt(g.Text("Queue")), h.Dd(dd))
}

// multiKueueFact says where Kueue's MultiKueue runs the job, as describe job does (the read
// model's QueueState.Dispatch): "Runs on cluster gpu-b (MultiKueue)" in the manager cluster,
// or the clusters it was sent to; in a worker, that its job is a manager's copy. nil for
// another job.
func multiKueueFact(q *cluster.QueueState) g.Node {
	switch {
	case q == nil:
		return nil
	case q.Dispatch() != "":
		d := q.Dispatch()
		return h.Div(h.ID("job-cluster"), h.Dt(g.Text("Cluster")), h.Dd(g.Text(strings.ToUpper(d[:1])+d[1:])))
	case q.Origin != "":
		return h.Div(h.ID("job-cluster"), h.Dt(g.Text("Cluster")),
			h.Dd(g.Text("A copy of a manager cluster's job, dispatched by MultiKueue (origin "+q.Origin+")")))
	}
	return nil
}

func podsSection(p uiPods) g.Node {
	head := g.Group{h.H2(g.Text("Pods"))}
	switch {
	case p.Err != "":
		return section("pods", head, errorBox("Pods unavailable:", p.Err))
	case len(p.Items) == 0:
		return section("pods", head, mutedP("No pods yet."))
	}
	rows := g.Map(p.Items, func(pod cluster.JobPod) g.Node {
		return h.Tr(h.Class("pod-row"),
			h.Td(h.Code(h.Class("object"), g.Text(pod.Pod))),
			h.Td(statusBadge(pod.Status)),
			h.Td(h.Class("num"), g.Text(pod.Ready)),
			h.Td(h.Class("num"), g.Text(strconv.Itoa(int(pod.Restarts)))),
			h.Td(g.Text(cmp.Or(pod.Node, uiNone))),
			h.Td(textOrDash(pod.Reason)),
		)
	})
	return section("pods", head, table("pod-list", "grid compact", []string{"Pod", "Status", "Ready", "Restarts", "Node", "Why"}, rows))
}

// attemptsSection lists the pods a training Job ran, those gone included, with why each
// ended; nil while its one attempt has not ended.
func attemptsSection(now time.Time, atts []cluster.Attempt) g.Node {
	if len(atts) == 0 || len(atts) == 1 && !atts[0].Gone && (atts[0].Outcome == cluster.AttemptRunning || atts[0].Outcome == cluster.AttemptPending) {
		return nil
	}
	rows := g.Map(atts, func(a cluster.Attempt) g.Node {
		code := ""
		if a.ExitCode != nil {
			code = strconv.Itoa(int(*a.ExitCode))
		}
		return h.Tr(h.Class("attempt-row"),
			h.Td(h.Code(h.Class("object"), g.Text(a.Pod)), g.If(a.Gone, g.Group{g.Text(" "), muted("gone")})),
			h.Td(g.Text(cmp.Or(a.Node, uiNone))),
			h.Td(whenOr(now, a.Start, muted(uiNone))),
			h.Td(whenOr(now, a.End, muted(uiNone))),
			h.Td(statusBadge(a.Outcome)),
			h.Td(h.Class("num"), textOrDash(code)),
			h.Td(textOrDash(a.Reason)),
		)
	})
	return section("attempts", g.Group{h.H2(g.Text("Attempts")), h.Span(h.Class("muted small"), g.Text("oldest first"))},
		table("attempt-list", "grid compact", []string{"Pod", "Node", "Start", "End", "Outcome", "Exit code", "Why"}, rows))
}

func eventsSection(now time.Time, id string, e uiEvents) g.Node {
	head := g.Group{h.H2(g.Text("Events")), h.Span(h.Class("muted small"), g.Text("newest last"))}
	switch {
	case e.Err != "":
		return section("events", head, errorBox("Events unavailable:", e.Err))
	case len(e.Items) == 0:
		return section("events", head, mutedP("No events (the API server keeps them for an hour)."))
	}
	rows := g.Map(e.Items, func(ev cluster.Event) g.Node {
		typeClass := "badge badge-neutral"
		if ev.Type == "Warning" {
			typeClass = "badge badge-warn"
		}
		return h.Tr(h.Class("event-row"),
			h.Td(h.Class("nowrap"), uiWhen(now, ev.LastSeen), g.If(ev.Count > 1, g.Group{g.Text(" "),
				h.Span(h.Class("muted small"), g.Text("(×"+strconv.Itoa(int(ev.Count))+")"))})),
			h.Td(h.Span(h.Class(typeClass), g.Text(ev.Type))),
			h.Td(g.Text(ev.Reason)),
			h.Td(h.Code(h.Class("object"), g.Text(ev.Object))),
			h.Td(g.Text(ev.Message)),
		)
	})
	return section("events", head,
		g.If(e.Older > 0, smallNote(humanize.Plural(e.Older, "older event")+" not shown (GET /api/v1/jobs/"+id+"/events lists them).")),
		table("event-list", "grid compact", []string{"Last seen", "Type", "Reason", "Object", "Message"}, rows),
	)
}

func logsSection(id string, l uiLogs) g.Node {
	var lines g.Node
	switch {
	case len(l.Lines) > 0:
		lines = g.Group{
			g.If(l.Dropped > 0, smallNote(humanize.Plural(l.Dropped, "earlier line")+" not shown.")),
			h.Pre(h.ID("log-lines"), h.Class("log"), g.Text(strings.Join(l.Lines, "\n")+"\n")),
			g.If(l.Note != "", smallNote(l.Note)),
		}
	case l.Err == "":
		lines = mutedP(cmp.Or(l.Note, "No log lines."))
	}
	return section("logs", g.Group{h.H2(g.Text("Logs")), h.Span(h.Class("muted small"), g.Text(l.Scope))},
		g.If(l.Err != "", errorBox("Logs unavailable:", l.Err)),
		lines,
		h.P(h.Class("muted small"), g.Text("Follow them with "), h.Code(g.Text("gpuctl logs -f "+id)), g.Text(".")),
	)
}

// section is a card of a page: its heading line, then its body.
func section(id string, head g.Group, body ...g.Node) g.Node {
	return h.Section(h.ID(id), h.Class("card"), h.Div(h.Class("card-head"), head), g.Group(body))
}

// table is a table of those column heads and rows, scrolled sideways when too wide.
func table(id, class string, heads []string, rows g.Group) g.Node {
	return h.Div(h.Class("table-wrap"),
		h.Table(h.ID(id), h.Class(class),
			h.THead(h.Tr(g.Map(heads, func(s string) g.Node { return h.Th(g.Text(s)) }))),
			h.TBody(rows),
		),
	)
}

// fact is a term and its definition in a list of facts; wideFact one on a line of its own.
func fact(term string, def ...g.Node) g.Node {
	return h.Div(h.Dt(g.Text(term)), h.Dd(def...))
}

func wideFact(term, def string) g.Node {
	return h.Div(h.Class("wide"), h.Dt(g.Text(term)), h.Dd(g.Text(def)))
}

// errorBox is a section's failure: what is unavailable, and why.
func errorBox(what, err string) g.Node {
	return h.Div(h.Class("error-box"), h.Role("alert"), h.B(g.Text(what)), g.Text(" "+err))
}

// statusBadge is a job's or a pod's status as a coloured badge.
func statusBadge(status string) g.Node {
	return h.Span(h.Class("badge status badge-"+statusClass(status)), g.Text(status))
}

func muted(text string) g.Node { return h.Span(h.Class("muted"), g.Text(text)) }

func mutedP(text string) g.Node { return h.P(h.Class("muted"), g.Text(text)) }

func smallNote(text string) g.Node { return h.P(h.Class("muted small"), g.Text(text)) }

// dash is a missing value in a table or a list of facts.
func dash() g.Node { return muted(uiNone) }

func textOrDash(s string) g.Node {
	if s == "" {
		return dash()
	}
	return g.Text(s)
}

func codeOrDash(s string) g.Node {
	if s == "" {
		return dash()
	}
	return h.Code(g.Text(s))
}

// whenOr is uiWhen for a time that may be missing, shown as missing then.
func whenOr(now time.Time, t *time.Time, missing g.Node) g.Node {
	if t == nil {
		return missing
	}
	return uiWhen(now, *t)
}
