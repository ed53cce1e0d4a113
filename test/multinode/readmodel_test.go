package multinode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A JobSet-mode training job is a job of the read model: `gpuctl get jobs` lists its ranks
// under its name, and describe finds it and tells its restarts after a rank is evicted.
func TestJobSetJobInReadModel(t *testing.T) {
	client, dyn, ns, first := startTwoRanks(t, "10m") // the ranks run through the test
	r := &cluster.Reader{Client: client, Dynamic: dyn}
	want := map[string]bool{first[0].Name: true, first[1].Name: true}
	checkRanks := func(how string, rows cluster.JobPodList) {
		t.Helper()
		if len(rows.Items) != 2 {
			t.Fatalf("%s: %d rows, want the 2 ranks of sft: %+v", how, len(rows.Items), rows.Items)
		}
		for _, row := range rows.Items {
			if row.Name != "sft" || row.JobID != ns+".sft" || row.Kind != "training" || !want[row.Pod] || row.Status != "Running" {
				t.Errorf("%s: row = %s %s %s %s %s, want a Running rank of training %s.sft", how, row.Pod, row.JobID, row.Name, row.Kind, row.Status, ns)
			}
		}
	}

	rows, err := r.JobPods(t.Context(), cluster.JobPodFilter{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	checkRanks("get jobs", rows)

	// The daemon's read model (the API, the page) answers from its informers: JobSets included.
	daemon := &cluster.Reader{Client: client, Dynamic: dyn, Objects: cluster.StartInformers(t.Context(), client, dyn, "")}
	rows, err = daemon.JobPods(t.Context(), cluster.JobPodFilter{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	checkRanks("the daemon's jobs", rows)

	// `gpuctl get jobs -w` watches them.
	wctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	err = r.WatchJobPods(wctx, cluster.JobPodFilter{Namespace: ns}, func(l cluster.JobPodList) error {
		checkRanks("get jobs -w", l)
		cancel()
		return nil
	})
	cancel()
	if err != nil || wctx.Err() != context.Canceled {
		t.Fatalf("get jobs -w: %v (%v), want its first rows", err, wctx.Err())
	}

	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: first[1].Name, Namespace: ns}}
	if err := client.PolicyV1().Evictions(ns).Evict(t.Context(), ev); err != nil {
		t.Fatalf("evict rank 1: %v", err)
	}
	second := waitRanksRunning(t, client, ns, sftSelector, 2, map[types.UID]bool{first[0].UID: true, first[1].UID: true})
	var d cluster.JobDescription
	poll(t, "describe sft to show its restart", func(ctx context.Context) (bool, error) {
		d, err = r.JobDescription(ctx, "sft")
		return err == nil && d.Job.Restarts == 1, err
	})
	if d.Job.JobID != ns+".sft" || d.Job.Kind != "training" || d.Job.K8sResources.Kind != "JobSet" || d.Job.Status != cluster.StatusRunning {
		t.Errorf("describe: job %s, kind %s (%s), status %s; want %s.sft, training (JobSet), Running",
			d.Job.JobID, d.Job.Kind, d.Job.K8sResources.Kind, d.Job.Status, ns)
	}
	if !strings.Contains(d.Job.Reason, "Restarted 1 time") {
		t.Errorf("describe: reason %q, want it to say the restart", d.Job.Reason)
	}
	pods := map[string]bool{}
	for _, p := range d.Pods {
		pods[p.Pod] = true
	}
	if len(pods) != 2 || !pods[second[0].Name] || !pods[second[1].Name] {
		t.Errorf("describe: pods %v, want the ranks of the restart %s, %s", d.Job.K8sResources.Pods, second[0].Name, second[1].Name)
	}
	t.Logf("describe: reason %q; %d events", d.Job.Reason, len(d.Events))
}
