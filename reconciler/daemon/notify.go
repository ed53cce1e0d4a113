package daemon

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/notify"
	"github.com/gpuctl/gpuctl/notify/forge"
	corev1 "k8s.io/api/core/v1"
)

// What the daemon tells of each sync (docs/notifications.md, "What the daemon sends"): the
// sync's result as a commit status on its revision (Options.Statuses, a Git source), as an
// alert (Options.Alerts: SyncFailed and SyncRecovered, for the whole cluster and for each held
// team) and as a Kubernetes Event on the status ConfigMap (Options.Recorder). None of them
// waits for a forge or a provider: Report and Send queue.

// StatusReporter posts the result of a sync on its commit: *forge.Reporter. Report never
// blocks.
type StatusReporter interface {
	Report(sha string, state forge.State, description string)
}

// The reasons of the Kubernetes Events on the status ConfigMap.
const (
	ReasonSyncSucceeded = "SyncSucceeded"
	ReasonSyncFailed    = "SyncFailed"
)

// syncKey is the Key of a sync's alerts: one condition for the cluster, one per held team.
const syncKey = "sync"

// maxAlertDetails bounds the errors an alert of a failed sync carries.
const maxAlertDetails = 10

// tell tells of the sync that ended with st, prev being the status before it.
func (d *Daemon) tell(prev, st Status) {
	d.tellForge(prev, st)
	d.tellAlerts(prev, st)
	d.tellEvent(st)
}

// tellForge reports st on its revision when the revision, its state or its held teams
// changed since prev: a sync of the same commit with the same outcome posts nothing. A fetch
// that failed has no revision: no status.
func (d *Daemon) tellForge(prev, st Status) {
	if d.opts.Statuses == nil || st.Revision == "" || st.Result == ResultFetchFailed || st.Result == ResultPending {
		return
	}
	state, desc := commitStatus(st)
	if prev.Revision == st.Revision && prev.Result != ResultFetchFailed {
		if was, _ := commitStatus(prev); was == state && slices.Equal(heldNames(prev.Held), heldNames(st.Held)) {
			return
		}
	}
	d.opts.Statuses.Report(st.Revision, state, desc)
}

// commitStatus is the commit status of a sync's result and its description:
//
//   - applied, no team held: success, "applied: 3 created, 1 updated";
//   - applied, teams held: failure, "applied; held: alice (teams/alice/x.yaml:3: ...)" — the
//     commit's tree is not all in the cluster, and the team that broke its files sees it on
//     its commit (the other teams' objects are applied: the description says so);
//   - invalid files or a plan refused by a safety rule: failure, the first error (what the
//     commit holds is wrong);
//   - the render, the plan or the apply failed: error (the cluster or the daemon).
//
// The description holds what the status's Message and Errors hold: diagnostics, names and
// file:line, never a Secret's value. The forge cuts it to its limit.
func commitStatus(st Status) (forge.State, string) {
	switch st.Result {
	case ResultSucceeded:
		if len(st.Held) == 0 {
			return forge.StateSuccess, "applied: " + appliedCounts(st)
		}
		held := make([]string, len(st.Held))
		for i, h := range st.Held {
			held[i] = h.Namespace
			if len(h.Errors) > 0 {
				held[i] += " (" + h.Errors[0] + ")"
			}
		}
		return forge.StateFailure, "applied; held: " + strings.Join(held, ", ")
	case ResultInvalid:
		return forge.StateFailure, "failed: " + firstError(st)
	case ResultRefused:
		return forge.StateFailure, "refused: " + st.Message
	default:
		return forge.StateError, "failed: " + firstError(st)
	}
}

// appliedCounts says what a good sync changed: "3 created, 1 updated, 2 pruned", or "no
// changes" when it applied nothing (its revision's objects were in the cluster already; in
// report mode, differences left are drift).
func appliedCounts(st Status) string {
	if st.Steps == nil || st.Steps.Apply == 0 {
		return "no changes"
	}
	var parts []string
	for _, c := range []struct{ action, verb string }{{"create", "created"}, {"update", "updated"},
		{"recreate", "recreated"}, {"delete", "pruned"}} {
		if n := st.Counts[c.action]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c.verb))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}

// firstError is a failed sync's first error, with how many more there are; its message when
// it has none.
func firstError(st Status) string {
	var errs []string
	for _, e := range st.Errors {
		if !strings.HasPrefix(e, "warning: ") {
			errs = append(errs, e)
		}
	}
	if len(errs) == 0 {
		return st.Message
	}
	s := errs[0]
	if n := len(errs) - 1; n > 0 {
		s += " (and " + humanize.Plural(n, "more error") + ")"
	}
	return s
}

// heldNames are the namespaces of held scopes, in order.
func heldNames(held []HeldScope) []string {
	out := make([]string, len(held))
	for i, h := range held {
		out[i] = h.Namespace
	}
	return out
}

// tellAlerts sends SyncFailed for a sync that failed, SyncRecovered for one that applied (the
// Sender drops a recovery of a condition it did not open); and for each team held, a
// SyncFailed of its namespace, recovered when a sync applies it again.
func (d *Daemon) tellAlerts(prev, st Status) {
	a := d.opts.Alerts
	rev := st.Revision
	if rev == "" {
		rev = st.AppliedRevision
	}
	switch st.Result {
	case ResultSucceeded:
		a.Send(notify.Event{Reason: notify.SyncRecovered, Severity: notify.SeverityInfo, Key: syncKey, Resolved: true,
			Revision: st.Revision, Message: st.Message})
	case ResultPending:
	default:
		var details []string
		for _, e := range st.Errors {
			if len(details) == maxAlertDetails {
				break
			}
			details = append(details, e)
		}
		what := "revision " + humanize.Revision(rev)
		if st.Result == ResultFetchFailed {
			what = "the source"
		}
		a.Send(notify.Event{Reason: notify.SyncFailed, Severity: notify.SeverityError, Key: syncKey, Revision: st.Revision,
			Message: fmt.Sprintf("sync %s (%s): %s", strings.ToLower(string(st.Result)), what, st.Message), Details: details})
	}
	if st.Result == ResultFetchFailed {
		return // nothing rendered: the held teams are the last sync's
	}
	for _, h := range st.Held {
		details := h.Errors
		if len(details) > maxAlertDetails {
			details = details[:maxAlertDetails]
		}
		a.Send(notify.Event{Reason: notify.SyncFailed, Severity: notify.SeverityError, Namespace: h.Namespace, Key: syncKey,
			Revision: st.Revision, Details: details,
			Message: fmt.Sprintf("the files of %s in revision %s have errors: held at %s", h.Namespace, humanize.Revision(st.Revision),
				cmp.Or(humanize.Revision(h.Revision), "no revision (never applied)"))})
	}
	if st.Result != ResultSucceeded {
		return
	}
	held := heldNames(st.Held)
	for _, h := range prev.Held {
		if !slices.Contains(held, h.Namespace) {
			a.Send(notify.Event{Reason: notify.SyncRecovered, Severity: notify.SeverityInfo, Namespace: h.Namespace, Key: syncKey,
				Resolved: true, Revision: st.Revision,
				Message: "the files of " + h.Namespace + " are applied again at revision " + humanize.Revision(st.Revision)})
		}
	}
}

// tellEvent records the sync's result as a Kubernetes Event on the status ConfigMap:
// SyncSucceeded (Normal) or SyncFailed (Warning) with the status's message. The recorder
// counts the repeats of one message in one Event.
func (d *Daemon) tellEvent(st Status) {
	if d.opts.Recorder == nil || d.opts.Store == nil || st.Result == ResultPending {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: d.opts.Store.Namespace, Name: d.opts.Store.Name}
	msg := st.Message
	if st.Revision != "" && !strings.Contains(msg, humanize.Revision(st.Revision)) {
		msg = "revision " + humanize.Revision(st.Revision) + ": " + msg
	}
	if st.Result == ResultSucceeded {
		d.opts.Recorder.Event(ref, corev1.EventTypeNormal, ReasonSyncSucceeded, msg)
		return
	}
	d.opts.Recorder.Event(ref, corev1.EventTypeWarning, ReasonSyncFailed, msg)
}

// alertIdle sends an IdleGPU alert of the idle policy's action on a job: a warning or a report
// opens the job's condition (Key idle/<namespace>/<job>), which the end of its idle run
// closes (idleEnded); a pause, once per run, is always sent. A job without GPU metrics is
// not idle: no alert.
func (d *Daemon) alertIdle(kind string, act IdleAction) {
	e := notify.Event{Reason: notify.IdleGPU, Severity: notify.SeverityWarning, Namespace: act.Job.Namespace,
		Object: kind + " " + act.Job.Namespace + "/" + act.Job.Name, Revision: act.Commit, Message: act.Message, Key: idleKey(act.Job.Namespace, act.Job.Name)}
	switch act.Reason {
	case ReasonIdleGPU:
	case ReasonIdlePaused:
		e.Key = ""
	default:
		return
	}
	d.opts.Alerts.Send(e)
}

// idleEnded closes the IdleGPU condition of a job whose idle run ended (busy again, or gone).
func (d *Daemon) idleEnded(namespace, name string) {
	d.opts.Alerts.Send(notify.Event{Reason: notify.IdleGPU, Severity: notify.SeverityInfo, Namespace: namespace,
		Key: idleKey(namespace, name), Resolved: true, Message: "job " + namespace + "/" + name + " is no longer idle"})
}

// idleKey is the Key of a job's IdleGPU condition.
func idleKey(namespace, name string) string { return "idle/" + namespace + "/" + name }
