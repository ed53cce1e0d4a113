package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// records are what gpuctl-reconciler records of its work, as gpuctl status, sync and drift
// read them: its ConfigMaps in its namespace through the kubeconfig (kubeRecords), or its API
// (remoteModel, --server), which answers from the same records as the token may see them.
type records interface {
	// Status reads the daemon's status.
	Status(ctx context.Context) (daemon.Status, error)
	// RequestSync asks the daemon for a sync now; a status answers the request
	// (daemon.Status.Answers) once a sync that started after it has ended.
	RequestSync(ctx context.Context) (daemon.Request, error)
	// Drift reads the drift report with the history entries of the last since (all of them
	// for 0) attached.
	Drift(ctx context.Context, since time.Duration, now time.Time) (drift.Report, error)
}

var (
	_ records = kubeRecords{}
	_ records = (*remoteModel)(nil)
)

// kubeRecords reads the daemon's ConfigMaps (keys.StatusName, keys.DriftName) in its
// namespace.
type kubeRecords struct {
	client    kubernetes.Interface
	namespace string
}

// Status reads the status ConfigMap.
func (k kubeRecords) Status(ctx context.Context) (daemon.Status, error) {
	st, _, err := daemon.NewStore(k.client, k.namespace).Read(ctx)
	return st, err
}

// RequestSync sets a request on the status ConfigMap (daemon.Store.Request).
func (k kubeRecords) RequestSync(ctx context.Context) (daemon.Request, error) {
	return daemon.NewStore(k.client, k.namespace).Request(ctx, daemon.NewRequestID())
}

// Drift reads the drift ConfigMap; a missing one says where it was looked for.
func (k kubeRecords) Drift(ctx context.Context, since time.Duration, now time.Time) (drift.Report, error) {
	r, hist, err := drift.NewStore(k.client, k.namespace).Read(ctx)
	if errors.Is(err, drift.ErrNoReport) {
		return drift.Report{}, fmt.Errorf("no drift report in namespace %s yet (no ConfigMap %s): gpuctl-reconciler writes it "+
			"once it has applied a revision and drift detection runs; is it running in %s? see gpuctl status -n %s",
			k.namespace, keys.DriftName, k.namespace, k.namespace)
	}
	if err != nil {
		return drift.Report{}, fmt.Errorf("read drift report: %w", err)
	}
	return r.Since(hist, since, now), nil
}

// Status reads the daemon's status: GET status (a team's token sees what concerns its
// namespaces).
func (m *remoteModel) Status(ctx context.Context) (daemon.Status, error) {
	return getJSON[daemon.Status](ctx, m, "status", nil)
}

// syncAnswer is the JSON of the 202 answer of POST sync (httpapi.SyncResponse).
type syncAnswer struct {
	RequestID string `json:"requestId"`
	Version   string `json:"version"`
}

// RequestSync asks the daemon for a sync: POST sync, which an admin's token may send; another
// token's 403 says so.
func (m *remoteModel) RequestSync(ctx context.Context) (daemon.Request, error) {
	a, err := sendJSON[syncAnswer](ctx, m, http.MethodPost, "sync", nil, http.StatusAccepted)
	if he := (*httpError)(nil); errors.As(err, &he) && he.Code == http.StatusForbidden {
		return daemon.Request{}, fmt.Errorf("%w: only an admin's token may ask for a sync (gpuctl status shows the last one)", err)
	}
	if err != nil {
		return daemon.Request{}, err
	}
	return daemon.Request{ID: a.RequestID, Version: a.Version}, nil
}

// Drift reads the drift report (of the token's namespaces) with the history of the last since:
// GET drift?since=, cut by the daemon's clock.
func (m *remoteModel) Drift(ctx context.Context, since time.Duration, _ time.Time) (drift.Report, error) {
	doc, err := getJSON[drift.Document](ctx, m, "drift", query("since", since.String()))
	if err != nil {
		return drift.Report{}, err
	}
	r := doc.Report
	r.History = doc.History
	return r, nil
}
