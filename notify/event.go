package notify

import (
	"slices"
	"sync"
	"time"
)

// Reason is what an Event tells.
type Reason string

// The reasons of Events.
const (
	// SyncFailed: a sync of a revision failed, or held a team's scope (Details: the first
	// errors). SyncRecovered: the first good sync after one that failed (same Key).
	SyncFailed    Reason = "SyncFailed"
	SyncRecovered Reason = "SyncRecovered"
	// Drift: a managed object differs from Git, or was deleted by hand; DriftResolved: it
	// matches again (same Key).
	Drift         Reason = "Drift"
	DriftResolved Reason = "DriftResolved"
	// ShadowWorkload: a GPU workload in a managed namespace that is not in Git.
	ShadowWorkload Reason = "ShadowWorkload"
	// JobFailed: a training job ended Failed (Message: its reason in words).
	JobFailed Reason = "JobFailed"
	// QuotaReached: a team requests all the GPUs of its quota (in a pool, with Kueue);
	// QuotaFreed: it no longer does (same Key).
	QuotaReached Reason = "QuotaReached"
	QuotaFreed   Reason = "QuotaFreed"
	// IdleGPU: a job's GPUs stayed idle under the idle policy (warned, reported or paused).
	IdleGPU Reason = "IdleGPU"
)

// Severity is how urgent an Event is.
type Severity string

// The severities, least urgent first.
const (
	SeverityInfo    Severity = "info"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// Event is one thing to tell. Its text is gpuctl's own words: names, reasons, file:line
// diagnostics; never a Secret's value (the daemon's messages never carry one).
type Event struct {
	Reason   Reason   `json:"reason"`
	Severity Severity `json:"severity"`
	// Namespace is the team the Event is about; "" for the whole cluster (a sync, the
	// daemon). Routes select teams by it.
	Namespace string `json:"namespace,omitempty"`
	// Object names what it is about, "Job alice/sft", "Deployment default/web"; "" for none.
	Object string `json:"object,omitempty"`
	// Revision is the Git revision (commit) it concerns, when it concerns one.
	Revision string `json:"revision,omitempty"`
	// Message says it in one line; Details add lines (the first errors of a sync).
	Message string   `json:"message"`
	Details []string `json:"details,omitempty"`
	// Key names the condition the Event opens or closes ("sync", "drift/Deployment/alice/web",
	// "job/alice/sft"): a Sender sends an opening Event of a Key once until an Event of the
	// same Key with Resolved closes it (a recovery is one more message).
	Key      string `json:"key"`
	Resolved bool   `json:"resolved,omitempty"`
	// Time is when it happened (the Sender's clock when zero).
	Time time.Time `json:"time"`
	// Cluster names the cluster of the daemon (--cluster); "" for one cluster.
	Cluster string `json:"cluster,omitempty"`
}

// Sender takes Events. Send never blocks on a provider and never fails: what cannot be
// delivered is logged by the Sender.
type Sender interface {
	Send(Event)
}

// Discard is a Sender that drops every Event: the daemon without alerts.
var Discard Sender = discard{}

type discard struct{}

func (discard) Send(Event) {}

// Recorder is a Sender that keeps every Event it is sent, in order, for whoever wants to see
// what was sent (the tests of the daemon and the drift detector). Its zero value is ready.
type Recorder struct {
	mu     sync.Mutex
	events []Event
	taken  int
}

// Send keeps e.
func (r *Recorder) Send(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Events returns a copy of every Event sent so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Take returns the Events sent since the last Take.
func (r *Recorder) Take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.events[r.taken:])
	r.taken = len(r.events)
	return out
}
