package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
)

// The routes of a job's logs and events. Logs are plain text, one "[<prefix>] <line>" per
// line as gpuctl logs prints them (cluster.LogLine.Format), or with "Accept:
// application/x-ndjson" one cluster.LogLine in JSON per line; events are JSON
// (cluster.EventList).

// Defaults and limits of GET /api/v1/jobs/{jobId}/logs.
const (
	defaultLogTail = 100
	maxLogTail     = 100_000
)

// getLogs answers GET /api/v1/jobs/{jobId}/logs?tail&since&grep&pod&previous&allPods&follow.
// Without follow, errors before the first line are JSON; with follow=true it checks the job
// (and the pod) first, answers 200 at once and streams each line as it is written, flushed,
// until the client goes away; the server's read and write deadlines are lifted for it.
func (s *server) getLogs(w http.ResponseWriter, r *http.Request) error {
	rd, err := s.model(r.Context())
	if err != nil {
		return err
	}
	opts, err := logOptions(r)
	if err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	id := r.PathValue("jobId")
	out := &lineWriter{w: w, rc: http.NewResponseController(w), media: mediaText}
	format := func(l cluster.LogLine) (string, error) { return l.Format(nil), nil }
	if accepts(r, mediaNDJSON) {
		out.media = mediaNDJSON
		format = func(l cluster.LogLine) (string, error) {
			b, err := json.Marshal(l)
			return string(b), err
		}
	}
	if opts.Follow {
		job, err := rd.Job(r.Context(), id)
		if err != nil {
			return err
		}
		if opts.Pod != "" && !slices.Contains(job.K8sResources.Pods, opts.Pod) {
			return cluster.UnknownPod(opts.Pod, job.JobID)
		}
		liftDeadlines(w)
		out.start()
	}
	err = rd.Logs(r.Context(), id, opts, func(l cluster.LogLine) error {
		text, err := format(l)
		if err != nil {
			return err
		}
		return out.line(text)
	})
	if err != nil && !out.started {
		return err
	}
	if err != nil && r.Context().Err() == nil {
		s.log.Warn("log stream ended early", "job", id, "err", err)
	}
	out.start() // a log without lines is an empty 200
	return nil
}

// logOptions parses the query of the logs route; a bad value is a 400.
func logOptions(r *http.Request) (cluster.LogOptions, error) {
	q := r.URL.Query()
	opts := cluster.DefaultLogOptions()
	tail, err := intParam(q, "tail", defaultLogTail, -1, maxLogTail)
	if err != nil {
		return opts, err
	}
	opts.Tail = int64(tail)
	if v := q.Get("since"); v != "" {
		if opts.Since, err = time.ParseDuration(v); err != nil || opts.Since < 0 {
			return opts, errorf(http.StatusBadRequest, "since: want a duration such as 10m or 2h, got %q", v)
		}
	}
	opts.Grep, opts.Pod = q.Get("grep"), q.Get("pod")
	for name, dst := range map[string]*bool{"follow": &opts.Follow, "previous": &opts.Previous, "allPods": &opts.AllPods} {
		if v := q.Get(name); v != "" {
			if *dst, err = strconv.ParseBool(v); err != nil {
				return opts, errorf(http.StatusBadRequest, "%s: want true or false, got %q", name, v)
			}
		}
	}
	return opts, nil
}

// lineWriter writes the lines of a plain-text answer, each flushed to the client, and the
// headers before the first.
type lineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	media   string
	started bool
}

func (l *lineWriter) start() {
	if l.started {
		return
	}
	l.started = true
	h := l.w.Header()
	h.Set("Content-Type", l.media+"; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	l.w.WriteHeader(http.StatusOK)
	_ = l.rc.Flush()
}

func (l *lineWriter) line(s string) error {
	l.start()
	if _, err := io.WriteString(l.w, s+"\n"); err != nil {
		return err
	}
	return l.rc.Flush()
}

// getEvents answers GET /api/v1/jobs/{jobId}/events: the job's events, oldest first.
func getEvents(rd cluster.Model, r *http.Request) (cluster.EventList, error) {
	return rd.JobEvents(r.Context(), r.PathValue("jobId"))
}

// listEvents answers GET /api/v1/events?namespace: the events of every job of the namespace
// (all for none), oldest first.
func listEvents(rd cluster.Model, r *http.Request) (cluster.EventList, error) {
	return rd.Events(r.Context(), r.URL.Query().Get("namespace"))
}

// accepts reports whether the request's Accept header names the media type.
func accepts(r *http.Request, media string) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			if mt, _, _ := strings.Cut(part, ";"); strings.EqualFold(strings.TrimSpace(mt), media) {
				return true
			}
		}
	}
	return false
}
