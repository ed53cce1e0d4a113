package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

var errNoBackend = errors.New("the API has no daemon backend")

// SyncResponse is the answer of POST /api/v1/sync (202 Accepted).
type SyncResponse struct {
	// RequestID identifies the request; the status's lastHandledRequest shows it once handled.
	RequestID string `json:"requestId"`
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

// status is the daemon's status (for the API and the web page).
func (s *server) status(ctx context.Context) (daemon.Status, error) {
	if s.opts.Backend == nil {
		return daemon.Status{}, errNoBackend
	}
	st, err := s.opts.Backend.Status(ctx)
	if err != nil {
		return daemon.Status{}, fmt.Errorf("status: %w", err)
	}
	return st, nil
}

// postSync serves POST /api/v1/sync: ask the daemon to sync now (admins only).
func (s *server) postSync(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Backend == nil {
		return errNoBackend
	}
	id, err := s.opts.Backend.RequestSync(r.Context())
	if err != nil {
		return fmt.Errorf("request sync: %w", err)
	}
	p, _ := PrincipalFrom(r.Context())
	s.log.Info("sync requested", "by", p.Name, "requestId", id)
	writeJSON(w, http.StatusAccepted, SyncResponse{RequestID: id})
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
