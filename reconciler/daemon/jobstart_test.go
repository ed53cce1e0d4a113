package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
)

// quotaJob is a plain Job in namespace qjobs; resources is its container's resources block.
func quotaJob(name, resources string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name + ", namespace: qjobs}\nspec:\n  template:\n    spec:\n" +
		"      restartPolicy: Never\n      containers:\n        - name: main\n          image: busybox\n" + resources
}

// TestJobRefusedByQuotaInStatus: a plain Job without requests in a namespace whose quota counts
// cpu and memory is applied, and then never gets a pod (failed quota: must specify ...). The
// sync's status names it as an error, with the API server's reason; a Job with requests
// created in the same sync is not reported. Nor is a Job created suspended for Kueue (queue
// label), which gets no pod either: the status counts it as queued, and the sync does not
// wait for it to start.
func TestJobRefusedByQuotaInStatus(t *testing.T) {
	h := newHarness(t, "jobquota", map[string]string{
		"quota.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: team-quota}\nusers:\n  qjobs: {cpu: 4, memory: 8Gi}\n",
	})
	h.start()
	first := h.waitStatus("the quota's sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	// The API server enforces a quota once its controller has computed its status.
	computed, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	if err := clusterfixture.QuotaComputed(computed, h.kube, "qjobs", "team-quota"); err != nil {
		t.Fatalf("the quota has no status: %v", err)
	}
	queued := strings.Replace(quotaJob("queued", ""), "namespace: qjobs}", "namespace: qjobs, labels: {"+keys.KueueQueueName+": "+keys.KueueLocalQueue+"}}", 1)
	queued = strings.Replace(queued, "spec:\n  template:", "spec:\n  suspend: true\n  template:", 1)
	h.write("jobs.yaml", quotaJob("bare", "")+"---\n"+
		quotaJob("sized", "          resources: {requests: {cpu: 100m, memory: 64Mi}}\n")+"---\n"+queued)
	st := h.waitStatus("the Jobs' sync", func(s daemon.Status) bool {
		return s.Revision != first.Revision && s.Result != daemon.ResultPending && s.Counts["create"] == 3
	})
	want := "Job qjobs/bare: cannot start: failed quota: team-quota: must specify "
	if len(st.Errors) != 1 || !strings.HasPrefix(st.Errors[0], want) ||
		!strings.Contains(st.Errors[0], "requests.cpu") || !strings.Contains(st.Errors[0], "requests.memory") {
		t.Fatalf("status errors %q, want one starting %q", st.Errors, want)
	}
	if st.Result != daemon.ResultSucceeded || st.Queued != 1 ||
		!strings.HasSuffix(st.Message, "; 1 Job it created cannot start; 1 Job it created is queued for Kueue's admission") {
		t.Fatalf("status: result %s, queued %d, message %q", st.Result, st.Queued, st.Message)
	}
	if st.Duration >= 3*time.Second { // the daemon's wait for Jobs to start (jobStartWait)
		t.Fatalf("the sync took %s: it waited for the queued Job to start", st.Duration)
	}
	t.Logf("status error: %s", st.Errors[0])
}
