package detector_test

import (
	"testing"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/notify"
)

// sent records the alerts a detector sends.
type sent struct{ notify.Recorder }

// find is the last alert of reason and key, nil if none.
func (s *sent) find(reason notify.Reason, key string) *notify.Event {
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if e := events[i]; e.Reason == reason && e.Key == key {
			return &e
		}
	}
	return nil
}

// TestDriftAlerts: a kubectl-edit of a managed Deployment sends Drift (its namespace, its
// field), undoing it DriftResolved of the same Key; a GPU Job that is not in Git sends
// ShadowWorkload.
func TestDriftAlerts(t *testing.T) {
	run := uniq()
	ns := "drift-alerts-" + run
	alerts := &sent{}
	h := newHarness(t, "alerts-"+run, detector.Options{Mode: drift.ModeReport, Alerts: alerts}, files(ns, "alerts-pool", "gpu-t4-0"))
	h.unlabel("gpu-t4-0")

	key := "drift/modified/Deployment/" + ns + "/web"
	h.edit("deployments", ns, "web", `{"spec":{"replicas":3}}`)
	h.poll("the Drift alert", func() (bool, string) { return alerts.find(notify.Drift, key) != nil, "no Drift alert " + key })
	e := alerts.find(notify.Drift, key)
	if e.Namespace != ns || e.Severity != notify.SeverityWarning || e.Object != "Deployment "+ns+"/web" || len(e.Details) != 1 || e.Resolved {
		t.Errorf("Drift alert %+v", e)
	}
	h.edit("deployments", ns, "web", `{"spec":{"replicas":1}}`)
	h.poll("the DriftResolved alert", func() (bool, string) {
		e := alerts.find(notify.DriftResolved, key)
		return e != nil && e.Resolved && e.Namespace == ns, "no DriftResolved alert"
	})

	h.shadowJob(ns, "by-hand", 2)
	h.poll("the ShadowWorkload alert", func() (bool, string) {
		e := alerts.find(notify.ShadowWorkload, "drift/shadow/Job/"+ns+"/by-hand")
		return e != nil && e.Namespace == ns, "no ShadowWorkload alert"
	})
}
