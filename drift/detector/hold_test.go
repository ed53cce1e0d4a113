package detector_test

import (
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// TestHeldTeamsWorkloadsAreNoShadows: while a team's files have errors, the daemon holds its
// namespace and its gpuctl workloads stay as they were (issue 30): they are not in the
// revision's objects, yet they are no shadow GPU workloads. A GPU Job made by hand in the held
// namespace still is one. (The admin's Deployment keeps Deployments watched.)
func TestHeldTeamsWorkloadsAreNoShadows(t *testing.T) {
	run := uniq()
	team := "drift-held-" + run
	h := newHarness(t, "held-"+run, detector.Options{Mode: drift.ModeReport}, map[string]string{
		".gpuctl.yaml":                "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"quota.yaml":                  "kind: quota\nversion: v0.1\nmetadata: {name: team}\nusers:\n  " + team + ": {gpu: 8, cpu: 32, memory: 64Gi}\n",
		"web.yaml":                    "kind: compute\nversion: v0.1\njob: {name: admin-web, namespace: " + team + "}\nenvironment: {image: nginx}\nservice: {replicas: 1}\n",
		"teams/" + team + "/web.yaml": "kind: compute\nversion: v0.1\njob: {name: web}\nenvironment: {image: nginx}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\nservice: {replicas: 1}\n",
	})
	h.write("teams/"+team+"/typo.yaml", "kind: compute\nversion: v0.1\njob: {name: other}\nenvironment: {image: nginx}\nresources: {gpus: 1}\n")
	h.waitStatus("the team held", func(s daemon.Status) bool { return len(s.Held) == 1 && s.Held[0].Namespace == team })
	h.shadowJob(team, "sneaky", 2)
	r, _ := h.waitReport("the hand-made job", has(drift.Shadow, "Job", "sneaky"))
	time.Sleep(500 * time.Millisecond) // one more pass of the detector
	r, _, _ = h.det.Current()
	if it := item(r, drift.Shadow, "Deployment", "web"); it != nil {
		t.Errorf("the held team's Deployment is reported as a shadow: %s", it.Message)
	}
}
