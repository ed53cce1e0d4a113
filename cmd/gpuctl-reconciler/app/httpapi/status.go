package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

var errNoBackend = errors.New("the API has no daemon backend")

// SyncResponse is the answer of POST /api/v1/sync (202 Accepted). Any sync that starts after
// the request answers it: the status is that sync's (or a later one's) once its handledThrough
// is at or after Version, compared as integers (daemon.Status.Answers).
type SyncResponse struct {
	// RequestID identifies the request (in the daemon's log, and the status's
	// lastHandledRequest when no later request came before the sync).
	RequestID string `json:"requestId"`
	// Version is the resourceVersion of the status ConfigMap that the request's write made.
	Version string `json:"version"`
}

// PlanResponse is the answer of GET /api/v1/plan: the plan's fields and its summary line.
type PlanResponse struct {
	Summary string `json:"summary"`
	*reconciler.Plan
}

// getStatus serves GET /api/v1/status: the daemon's status as it records it.
func (s *server) getStatus(w http.ResponseWriter, r *http.Request) error {
	st, err := s.status(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// status is the daemon's status (for the API and the web page), as the request's caller may
// see it (statusFor).
func (s *server) status(ctx context.Context) (daemon.Status, error) {
	if s.opts.Backend == nil {
		return daemon.Status{}, errNoBackend
	}
	st, err := s.opts.Backend.Status(ctx)
	if err != nil {
		return daemon.Status{}, fmt.Errorf("status: %w", err)
	}
	p, _ := PrincipalFrom(ctx)
	var nsOf func(string) (string, bool)
	if m, ok := s.opts.Backend.(namespaceMapper); ok {
		nsOf = m.NamespaceOf
	}
	return statusFor(st, p, nsOf), nil
}

// namespaceMapper is a Backend that knows the namespace rules (the daemon): which namespace's
// directory a file of the status is in.
type namespaceMapper interface {
	// NamespaceOf returns the namespace whose directory holds a file (relative to the rendered
	// directory); false for a file of none (the administrator's) or rules it does not know.
	NamespaceOf(file string) (string, bool)
}

// statusFor is the status as a principal sees it: all of it when it sees every namespace. A
// team's token sees what the status says of its namespaces only, as it sees their jobs: the
// revision's commit message, which may name any team's job, is left out; of the held
// namespaces, its own (with their errors); of the errors and the fields taken back, the lines
// about an object of its namespaces (`Deployment alice/web: ...`) or a file of their
// directories (nsOf; nil: none is known) are kept, the others counted in a last line; a
// message that names objects (a failed render or plan, a refused plan) is replaced by a line
// that says so. A field of the status that names other teams' objects must be cut here too.
func statusFor(st daemon.Status, p Principal, nsOf func(file string) (string, bool)) daemon.Status {
	if p.SeesAll() {
		return st
	}
	st.RevisionMessage = ""
	st.Errors = linesFor(st.Errors, p, nsOf)
	st.TakenBack = linesFor(st.TakenBack, p, nsOf)
	var held []daemon.HeldScope
	for _, h := range st.Held {
		if p.Sees(h.Namespace) {
			held = append(held, h)
		}
	}
	st.Held = held
	switch {
	case st.Result == daemon.ResultRefused,
		st.Result == daemon.ResultFailed && (strings.HasPrefix(st.Message, "render: ") || strings.HasPrefix(st.Message, "plan: ")):
		st.Message = string(st.Result) + ": the message names objects of other namespaces; a token of every namespace sees it"
	}
	return st
}

// linesFor keeps the status lines that concern a principal's namespaces (seesLine) and counts
// the others in a last line.
func linesFor(lines []string, p Principal, nsOf func(string) (string, bool)) []string {
	var out []string
	hidden := 0
	for _, l := range lines {
		if seesLine(l, p, nsOf) {
			out = append(out, l)
		} else {
			hidden++
		}
	}
	if hidden > 0 {
		out = append(out, fmt.Sprintf("(%s about other namespaces, cluster-wide objects or the administrator's files: not shown to %q)",
			humanize.Plural(hidden, "more line"), p.Name))
	}
	return out
}

// seesLine reports whether a status line is about the principal's namespaces: an object's line
// (`Kind namespace/name: ...`, `warning: ` before it) of one of them, or a file's diagnostic
// (`path:line:col: ...`) in one of their directories. A line of neither form is not.
func seesLine(line string, p Principal, nsOf func(string) (string, bool)) bool {
	line = strings.TrimPrefix(line, "warning: ")
	head, _, _ := strings.Cut(line, ": ")
	if kind, ref, ok := strings.Cut(head, " "); ok && kind != "" && !strings.ContainsAny(kind, "/:") {
		ns, _, namespaced := strings.Cut(ref, "/")
		return namespaced && !strings.Contains(ns, " ") && p.Sees(ns)
	}
	file, _, _ := strings.Cut(head, ":")
	if nsOf == nil || file == "" {
		return false
	}
	ns, ok := nsOf(file)
	return ok && p.Sees(ns)
}

// postSync serves POST /api/v1/sync: ask the daemon to sync now (admins only).
func (s *server) postSync(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Backend == nil {
		return errNoBackend
	}
	req, err := s.opts.Backend.RequestSync(r.Context())
	if err != nil {
		return fmt.Errorf("request sync: %w", err)
	}
	p, _ := PrincipalFrom(r.Context())
	s.log.Info("sync requested", "by", p.Name, "requestId", req.ID, "version", req.Version)
	writeJSON(w, http.StatusAccepted, SyncResponse{RequestID: req.ID, Version: req.Version})
	return nil
}

// getPlan serves GET /api/v1/plan: what a sync would do now.
func (s *server) getPlan(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Backend == nil {
		return errNoBackend
	}
	plan, err := s.opts.Backend.Plan(r.Context())
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	cp := reconciler.Plan{}
	if plan != nil {
		cp = *plan
	}
	if cp.Changes == nil {
		cp.Changes = []*reconciler.Change{}
	}
	writeJSON(w, http.StatusOK, PlanResponse{Summary: cp.Summary(), Plan: &cp})
	return nil
}
