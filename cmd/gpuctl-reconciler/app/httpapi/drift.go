package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gpuctl/gpuctl/drift"
)

// defaultDriftSince is how far back GET /api/v1/drift and the web page look in the history.
const defaultDriftSince = 24 * time.Hour

// DriftResponse is the answer of GET /api/v1/drift: the current report, its summary line and
// the history entries of the asked period, oldest first ([] when there are none). It is the
// document that gpuctl drift -o json prints, written by the same function (drift.WriteJSON).
type DriftResponse = drift.Document

// getDrift serves GET /api/v1/drift?since=24h: the drift report with the history entries of
// the last since (a Go duration; 0 for the whole history).
func (s *server) getDrift(w http.ResponseWriter, r *http.Request) error {
	since := defaultDriftSince
	if q := r.URL.Query(); q.Has("since") {
		d, err := time.ParseDuration(q.Get("since"))
		if err != nil || d < 0 {
			return errorf(http.StatusBadRequest,
				"since: want a duration such as 24h or 90m (0 for the whole history), got %q", q.Get("since"))
		}
		since = d
	}
	rep, err := s.drift(r.Context(), since, time.Now())
	if err != nil {
		return err
	}
	startJSON(w, http.StatusOK)
	_ = drift.WriteJSON(w, rep) // the client went away; nothing to tell it
	return nil
}

// drift is the daemon's drift report with the history entries of the last since (all for 0)
// attached, oldest first, as the caller of the request (its context) sees it: unless it sees
// every namespace, only the items of objects in its namespaces (not those of cluster-scoped
// objects: a Namespace or a ClusterRole names another team).
func (s *server) drift(ctx context.Context, since time.Duration, now time.Time) (drift.Report, error) {
	if s.opts.Backend == nil {
		return drift.Report{}, errNoBackend
	}
	rep, hist, err := s.opts.Backend.Drift(ctx)
	if err != nil {
		return drift.Report{}, fmt.Errorf("drift: %w", err)
	}
	if p, _ := PrincipalFrom(ctx); !p.SeesAll() {
		hidden := func(it drift.Item) bool { return !p.Sees(it.Object.Namespace) }
		rep.Items = slices.DeleteFunc(slices.Clone(rep.Items), hidden)
		hist = slices.DeleteFunc(slices.Clone(hist), func(e drift.Entry) bool { return hidden(e.Item) })
	}
	return rep.Since(hist, since, now), nil
}
