package detector

import (
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/notify"
)

// alert sends the alert of an item that is new or changed (drift.Detected, drift.Changed):
// Drift, or ShadowWorkload for a workload that Git does not declare, in the object's
// namespace ("" for a Node). Its Key (alertKey) is closed by alertResolved.
func (d *Detector) alert(it drift.Item) {
	e := notify.Event{Reason: notify.Drift, Severity: notify.SeverityWarning, Namespace: it.Object.Namespace,
		Object: it.Object.String(), Message: it.Message, Key: alertKey(it)}
	if it.Category == drift.Shadow {
		e.Reason = notify.ShadowWorkload
	}
	for _, f := range it.Fields {
		e.Details = append(e.Details, f.String())
	}
	d.opts.Alerts.Send(e)
}

// alertResolved sends DriftResolved for an item that left the report: how is why (resolved
// by hand, corrected, deleted as a shadow, taken back by a sync).
func (d *Detector) alertResolved(it drift.Item, how drift.Transition) {
	d.opts.Alerts.Send(notify.Event{Reason: notify.DriftResolved, Severity: notify.SeverityInfo, Namespace: it.Object.Namespace,
		Object: it.Object.String(), Message: resolvedHow[how] + " (was: " + it.Message + ")", Key: alertKey(it), Resolved: true})
}

// resolvedHow says how an item left the report, in words.
var resolvedHow = map[drift.Transition]string{
	drift.Resolved: "matches Git again", drift.Corrected: "gpuctl re-applied what Git declares",
	drift.ShadowDeleted: "gpuctl deleted the workload, which is not in Git (--drift-delete-shadow)",
	drift.TakenBack:     "a sync applied a revision that changes the object (Git wins)",
}

// alertKey is the Key of an item's alerts: drift/<category>/<kind>/<namespace>/<name>
// (drift/<category>/<kind>/<name> for a Node), one condition per item of the report.
func alertKey(it drift.Item) string {
	k := "drift/" + string(it.Category) + "/" + it.Object.Kind + "/"
	if it.Object.Namespace != "" {
		k += it.Object.Namespace + "/"
	}
	return k + it.Object.Name
}
