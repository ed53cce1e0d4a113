package daemon

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/humanize"
)

// Result is the outcome of the last sync attempt.
type Result string

// The results of a sync.
const (
	ResultPending   Result = "Pending"
	ResultSucceeded Result = "Succeeded"
	ResultFailed    Result = "Failed"
	// ResultRefused: a safety rule refused the plan (empty render, prune budget).
	ResultRefused Result = "Refused"
	// ResultInvalid: the revision's files are invalid; nothing was applied.
	ResultInvalid Result = "Invalid"
	// ResultFetchFailed: the source could not be fetched; the last good revision stays applied.
	ResultFetchFailed Result = "FetchFailed"
)

// Status is what the daemon reports about its syncs. It is stored as JSON in the status
// ConfigMap (key "status") and served at /api/v1/status.
type Status struct {
	// Cluster is the name of the cluster that the daemon syncs (gpuctl-reconciler --cluster,
	// render.Options.Cluster); "" without one.
	Cluster string `json:"cluster,omitempty"`
	// Source is where the files come from (no credentials).
	Source string `json:"source"`
	// Revision is the revision of the last attempt; AppliedRevision the last one applied.
	Revision        string `json:"revision,omitempty"`
	RevisionMessage string `json:"revisionMessage,omitempty"`
	AppliedRevision string `json:"appliedRevision,omitempty"`
	// AppliedDigest identifies the objects last applied (their applied-hashes): in report
	// mode a sync that renders the same objects does not apply them again.
	AppliedDigest string `json:"appliedDigest,omitempty"`
	// LastAttempt and LastSuccess are when the last sync started and the last good one ended.
	LastAttempt time.Time `json:"lastAttempt,omitempty"`
	LastSuccess time.Time `json:"lastSuccess,omitempty"`
	Result      Result    `json:"result"`
	// Message explains the result in one line.
	Message string `json:"message,omitempty"`
	// Summary is the plan's summary line of the last attempt.
	Summary string `json:"summary,omitempty"`
	// Counts are the objects per action of the last attempt.
	Counts map[string]int `json:"counts,omitempty"`
	// Errors are the per-object errors and diagnostics of the last attempt (at most 50).
	Errors []string `json:"errors,omitempty"`
	// Held are the tenant namespaces whose files have errors: each keeps the state of the
	// revision it is held at while every other scope applies the new one (render.Options.Hold).
	Held []HeldScope `json:"held,omitempty"`
	// Queued counts the Jobs the last attempt created for Kueue to admit (labelled
	// kueue.x-k8s.io/queue-name, created suspended): they start when Kueue admits them, and
	// waiting in the queue is not an error.
	Queued int `json:"queued,omitempty"`
	// TakenBack are the objects whose fields the last attempt took back from other managers,
	// because its revision changed them (Git wins), e.g.
	// `Deployment default/web: took back .spec.replicas from "kubectl"` (at most 50).
	TakenBack []string `json:"takenBack,omitempty"`
	// Duration is how long the last attempt took.
	Duration time.Duration `json:"duration,omitempty"`
	// Plan is what planning the last attempt cost.
	Plan *PlanCost `json:"plan,omitempty"`
	// Steps is where the last attempt's time went.
	Steps *Steps `json:"steps,omitempty"`
	// FetchingSince is when the fetch in progress began, once it has lasted longer than
	// Options.SlowFetch (5 s): the source has not answered yet, and `gpuctl status` says
	// "fetching for 45s". The status that the sync records when it ends clears it.
	FetchingSince time.Time `json:"fetchingSince,omitzero"`
	// Applying is the apply in progress, recorded in the status ConfigMap before its first
	// write, or the last one that never ended (the daemon was killed or stopped during it): the
	// cluster may then hold part of its revision, whatever AppliedRevision says. A sync that
	// starts with it set plans and applies in full (report mode's shortcut does not trust
	// AppliedDigest); the end of an apply clears it.
	Applying *Applying `json:"applying,omitempty"`
	// APIServer is set while this replica cannot reach the Kubernetes API server: since when,
	// and the last probe's error. The status ConfigMap cannot be written meanwhile, so it is
	// never there (`gpuctl status` shows the last status recorded before the outage): GET
	// /api/v1/status and the page serve it from memory, and /readyz fails with it. When the API
	// server answers again, the daemon syncs at once and it is cleared.
	APIServer *Unreachable `json:"apiServer,omitempty"`
	// LastHandledRequest is the id of the newest sync request (Request.ID) that the last sync
	// that answered requests had seen when it started.
	LastHandledRequest string `json:"lastHandledRequest,omitempty"`
	// HandledThrough is the resourceVersion of the status ConfigMap that the last sync that
	// answered requests had seen when it started: it answers every request whose Version is at
	// or before it (Status.Answers), each caller with the same result.
	HandledThrough string `json:"handledThrough,omitempty"`
	// Leader is the identity of the replica that wrote this status.
	Leader string `json:"leader,omitempty"`
	// Mode is the drift mode.
	Mode drift.Mode `json:"mode,omitempty"`
}

// Applying is an apply that has begun (Status.Applying).
type Applying struct {
	// Revision is the revision being applied.
	Revision string `json:"revision"`
	// Since is when its apply began.
	Since time.Time `json:"since"`
}

// String is the apply on one line: `revision 4f9c2a7 since 2026-05-01T10:04:05Z (45 s ago)`.
func (a *Applying) String() string {
	return "revision " + humanize.Revision(a.Revision) + " since " + a.Since.UTC().Format(time.RFC3339) + " (" + humanize.Age(time.Since(a.Since)) + " ago)"
}

// HeldScope is a tenant namespace held at its last good revision.
type HeldScope struct {
	// Namespace is the tenant namespace (a team).
	Namespace string `json:"namespace"`
	// Revision is the revision whose state of the namespace stays applied ("": none was
	// applied yet).
	Revision string `json:"revision,omitempty"`
	// Errors are the errors of the namespace's files in the last attempt (at most 50), with
	// paths relative to the revision.
	Errors []string `json:"errors"`
}

// String is the held scope on one line, with its first error:
// `bob: held at 4f9c2a7: teams/bob/widget.yaml:2: ...`.
func (h HeldScope) String() string {
	s := h.Namespace + ": held at " + cmp.Or(humanize.Revision(h.Revision), "no revision (never applied)")
	if len(h.Errors) > 0 {
		s += ": " + h.Errors[0]
		if n := len(h.Errors) - 1; n > 0 {
			s += " (and " + humanize.Plural(n, "more error") + ")"
		}
	}
	return s
}

// Steps is how long each step of a sync took; the rest of its Duration is bookkeeping (the
// digest, the status, the Jobs' start checks).
type Steps struct {
	// Fetch is reading the revision from the source.
	Fetch time.Duration `json:"fetch"`
	// Render is turning its files into objects: with a render ahead (Ahead), the wait for it.
	Render time.Duration `json:"render"`
	// Ahead is the time of the render made ahead of the sync, while the file events settled,
	// when the sync used it (0: the sync rendered).
	Ahead time.Duration `json:"renderedAhead,omitempty"`
	// Plan is deciding what to do (Plan.Duration).
	Plan time.Duration `json:"plan"`
	// Apply is the writes.
	Apply time.Duration `json:"apply"`
	// Drift is handing the applied objects to the drift detector.
	Drift time.Duration `json:"drift"`
}

// String is the steps as the sync's log line and gpuctl status show them.
func (s *Steps) String() string {
	d := humanize.Duration
	render := d(s.Render)
	if s.Ahead > 0 {
		render += " (rendered ahead in " + d(s.Ahead) + ")"
	}
	return fmt.Sprintf("fetch %s, render %s, plan %s, apply %s, drift %s", d(s.Fetch), render, d(s.Plan), d(s.Apply), d(s.Drift))
}

// PlanCost is what a sync's plan cost: its API requests, the members it read by LIST and
// those it decided from the drift detector's watches, and its time.
type PlanCost struct {
	Requests int64         `json:"requests"`
	Listed   int           `json:"listed"`
	Watched  int           `json:"watched"`
	Duration time.Duration `json:"duration"`
}

// Marshal encodes the status for the ConfigMap.
func (s Status) Marshal() string {
	b, _ := json.Marshal(s) // plain data: cannot fail
	return string(b)
}

// ParseStatus decodes a status from its ConfigMap value.
func ParseStatus(data string) (Status, error) {
	var s Status
	err := json.Unmarshal([]byte(data), &s)
	return s, err
}
