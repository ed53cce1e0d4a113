package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
)

// The job page, GET /jobs/{jobId}: a job's status and facts, its pods with why they are in
// their state, its last events and the last lines of its log, as the API's routes of the job
// answer them (GET /api/v1/jobs/{jobId}, .../events, .../logs).

// Limits of the job page.
const (
	uiLogLines   = 200             // log lines shown, the last ones
	uiLogLineLen = 2000            // runes of a log line shown; the rest is cut
	uiLogTimeout = 5 * time.Second // the log is read for at most this long
	uiEventRows  = 50              // events shown, the newest
)

// uiJobPage is what the job page renders. As on the overview, each section has its own error.
type uiJobPage struct {
	Frame  uiFrame
	ID     string // the job id asked for; the canonical one once the job is found
	Err    string // the job itself could not be read
	Job    cluster.JobDetail
	Pods   uiPods
	Events uiEvents
	Logs   uiLogs
	Usage  uiUsage // its GPU usage charts (ui_chart.go)
}

type uiPods struct {
	Err   string
	Items []cluster.JobPod
}

type uiEvents struct {
	Err   string
	Items []cluster.Event
	Older int // older events not shown
}

type uiLogs struct {
	Err     string
	Scope   string // which lines: "last 200 lines", "last 25 lines of each of 8 pods"
	Lines   []string
	Dropped int    // earlier lines read but not shown
	Note    string // why there are no lines, or that the read stopped early
}

// getJobPage serves GET /jobs/{jobId}: an unknown job is a 404 page, an ambiguous name a 400.
func (s *server) getJobPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := time.Now()
	id := r.PathValue("jobId")
	page := uiJobPage{ID: id, Frame: s.frame(ctx, id+" · "+s.site(), now)}
	rd, err := s.model(ctx)
	if err == nil {
		page.Job, err = rd.Job(ctx, id)
	}
	if err != nil {
		e := asError(err)
		if e.Code == http.StatusInternalServerError {
			s.log.Warn("job page", "job", id, "err", err)
		}
		page.Err = e.Message
		s.writePage(w, e.Code, jobDoc(page))
		return
	}
	page.ID = page.Job.JobID
	page.Frame.Title = page.Job.JobID + " · " + page.Job.Status + " · " + s.site()
	var wg sync.WaitGroup
	wg.Go(func() { page.Pods = s.uiPods(ctx, rd, page.Job) })
	wg.Go(func() { page.Events = s.uiEvents(ctx, rd, page.Job.JobID) })
	wg.Go(func() { page.Logs = s.uiLogs(ctx, rd, page.Job) })
	wg.Go(func() { page.Usage = s.uiJobUsage(ctx, page.Job, now) })
	wg.Wait()
	s.writePage(w, http.StatusOK, jobDoc(page))
}

// uiPods are the job's pods as `gpuctl get jobs` shows them (cluster.JobPods: the status in
// words and why), by name.
func (s *server) uiPods(ctx context.Context, rd cluster.Model, job cluster.JobDetail) uiPods {
	if len(job.K8sResources.Pods) == 0 {
		return uiPods{}
	}
	// the job's own rows: its workload carries the app label of its name (render)
	rows, err := rd.JobPods(ctx, cluster.JobPodFilter{Namespace: job.Namespace, Selector: keys.App + "=" + job.Name})
	if err != nil {
		return uiPods{Err: s.sectionError("pods", err)}
	}
	var out uiPods
	for _, p := range rows.Items {
		if p.JobID == job.JobID && p.Pod != "" {
			out.Items = append(out.Items, p)
		}
	}
	slices.SortFunc(out.Items, func(a, b cluster.JobPod) int { return strings.Compare(a.Pod, b.Pod) })
	return out
}

// statusClass is the badge colour of a job's or a pod's status.
func statusClass(status string) string {
	switch status {
	case cluster.StatusRunning, cluster.StatusSucceeded, "Completed":
		return "ok"
	case cluster.StatusPending, cluster.StatusPartiallyRunning, cluster.StatusQueued, cluster.StatusPreempted,
		"ContainerCreating", "PodInitializing", "Terminating":
		return "warn"
	case cluster.StatusFailed, "Error", "OOMKilled", "Evicted", "ErrImagePull", "CreateContainerConfigError", "CreateContainerError":
		return "bad"
	}
	if strings.HasSuffix(status, "BackOff") {
		return "bad"
	}
	return "neutral"
}

// uiEvents are the job's newest events, newest last.
func (s *server) uiEvents(ctx context.Context, rd cluster.Model, id string) uiEvents {
	list, err := rd.JobEvents(ctx, id)
	if err != nil {
		return uiEvents{Err: s.sectionError("events", err)}
	}
	out := uiEvents{Items: list.Items}
	if n := len(out.Items); n > uiEventRows {
		out.Items, out.Older = out.Items[n-uiEventRows:], n-uiEventRows
	}
	return out
}

// uiLogs reads the last lines of the job's log, once: uiLogLines in all, shared among its
// pods, for at most uiLogTimeout.
func (s *server) uiLogs(ctx context.Context, rd cluster.Model, job cluster.JobDetail) uiLogs {
	pods := max(1, len(job.K8sResources.Pods))
	out := uiLogs{Scope: "last " + humanize.Plural(uiLogLines, "line")}
	opts := cluster.DefaultLogOptions()
	opts.Tail = int64(max(1, uiLogLines/pods))
	if pods > 1 {
		out.Scope = fmt.Sprintf("last %s of each of %d pods", humanize.Plural(int(opts.Tail), "line"), pods)
	}
	ctx, cancel := context.WithTimeout(ctx, uiLogTimeout)
	defer cancel()
	err := rd.Logs(ctx, job.JobID, opts, func(l cluster.LogLine) error {
		line := l.Format(nil)
		if r := []rune(line); len(r) > uiLogLineLen {
			line = string(r[:uiLogLineLen]) + "…"
		}
		out.Lines = append(out.Lines, line)
		if len(out.Lines) > uiLogLines {
			out.Lines = out.Lines[1:]
			out.Dropped++
		}
		return nil
	})
	var noLogs *cluster.NoLogsError
	switch {
	case err == nil:
	case errors.As(err, &noLogs):
		out.Note = "No log yet: " + noLogs.Error() + "."
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		out.Note = fmt.Sprintf("Stopped reading after %s: the log may have more lines.", uiLogTimeout)
	default:
		out.Err = s.sectionError("logs", err)
	}
	return out
}
