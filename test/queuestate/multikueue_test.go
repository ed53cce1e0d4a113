package queuestate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// The local cluster as the manager of Kueue's MultiKueue: the real Kueue admits a Job whose
// spec.managedBy is MultiKueue's (no pod of it runs here), its Workload's status then names the
// worker cluster gpu-b as MultiKueue writes it (first nominated with gpu-a, then clusterName),
// and the Job's status is the worker's as MultiKueue copies it. The worker gpu-b is a stub of
// its daemon's API. The same cluster also holds a worker's copy of a job (its origin label)
// whose manager is not read.

// mkTeam is the namespace of the test, with a ClusterQueue of its own (in no cohort).
const mkTeam = "mk-alice"

// clientConfig writes the CLI's config file in a fresh $XDG_CONFIG_HOME and returns its path.
func clientConfig(t *testing.T, content string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	path := filepath.Join(home, "gpuctl", "config")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// workerStub is the daemon's API of the worker gpu-b: its copy of mk-alice.train (origin
// multikueue, under the Workload named workload, as MultiKueue names it after the manager's)
// with a running pod and a log line, and a job of its own.
func workerStub(t *testing.T, workload string) *httptest.Server {
	t.Helper()
	id := mkTeam + ".train"
	q := &cluster.QueueState{Workload: workload, ClusterQueue: mkTeam, State: cluster.QueueAdmitted, Origin: "multikueue"}
	rows := cluster.JobPodList{Items: []cluster.JobPod{
		{Pod: "train-0-x7k2p", JobID: id, Name: "train", Namespace: mkTeam, Kind: "training", Status: "Running", Ready: "1/1", Node: "gpu-b-node-3", Queue: q},
		{Pod: "own-0-abcde", JobID: mkTeam + ".own", Name: "own", Namespace: mkTeam, Kind: "training", Status: "Running", Node: "gpu-b-node-1"},
	}}
	answer := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok-b" {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error":"invalid bearer token","code":401}`)
				return
			}
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/jobpods", answer(rows))
	mux.Handle("GET /api/v1/jobs/"+id, answer(cluster.JobDetail{JobID: id, Name: "train", Namespace: mkTeam, Queue: q}))
	mux.Handle("GET /api/v1/jobs/"+id+"/logs", answer(cluster.LogLine{Pod: "train-0-x7k2p", Container: "main", Prefix: "rank-0", Text: "step 7 loss 1.25 on gpu-b"}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestMultiKueueManagerView: the manager's read model, get jobs, describe job and logs of a
// job that MultiKueue runs on gpu-b, and the fleet's view of the manager with gpu-b.
func TestMultiKueueManagerView(t *testing.T) {
	c := testcluster.Current()
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	apply(t, dyn, "ResourceFlavor", "", pool, map[string]any{"spec": map[string]any{"nodeLabels": map[string]any{keys.Pool: pool}}})
	apply(t, dyn, "WorkloadPriorityClass", "", "gpuctl-medium", map[string]any{"value": int64(500000)})
	createTeams(t, kube, dyn, mkTeam)
	cq := clusterQueue(mkTeam, "")
	delete(cq["spec"].(map[string]any), "cohortName")
	apply(t, dyn, "ClusterQueue", "", mkTeam, cq)
	apply(t, dyn, "LocalQueue", mkTeam, keys.KueueLocalQueue, map[string]any{"spec": map[string]any{"clusterQueue": mkTeam}})

	// train: the manager's Job, which MultiKueue dispatches; local: a job of this cluster;
	// copy: a worker's copy of another manager's job.
	trainingJob(t, kube, mkTeam, "train", "medium", 2, func(j *batchv1.Job) { j.Spec.ManagedBy = new(keys.MultiKueueManager) })
	trainingJob(t, kube, mkTeam, "local", "medium", 2)
	trainingJob(t, kube, mkTeam, "copy", "medium", 2, func(j *batchv1.Job) { j.Labels[keys.MultiKueueOrigin] = "multikueue" })
	r := &cluster.Reader{Client: kube, Dynamic: dyn}
	rows := waitRows(t, r, mkTeam, "the three jobs to be admitted", func(rows map[string]cluster.JobPod) bool {
		return state(rows["train"]) == cluster.QueueAdmitted && state(rows["local"]) == cluster.QueueAdmitted && state(rows["copy"]) == cluster.QueueAdmitted
	})
	workload := rows["train"].Queue.Workload

	// MultiKueue sends it to gpu-a and gpu-b, then gpu-b admits it (clusterName must be one of
	// the nominated: Kueue's webhook), and the worker's status is copied to the Job.
	patchStatus := func(doc string) {
		t.Helper()
		if _, err := dyn.Resource(kueue("Workload")).Namespace(mkTeam).Patch(t.Context(), workload, types.MergePatchType,
			[]byte(doc), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("patch the Workload's status %s: %v", doc, err)
		}
	}
	patchStatus(`{"status":{"nominatedClusterNames":["gpu-a","gpu-b"]}}`)
	waitRows(t, r, mkTeam, "train to be sent to gpu-a and gpu-b", func(rows map[string]cluster.JobPod) bool {
		return strings.HasSuffix(rows["train"].Reason, "; sent to gpu-a, gpu-b by MultiKueue, admitted by none yet")
	})
	patchStatus(`{"status":{"clusterName":"gpu-b","nominatedClusterNames":null}}`)
	waitRows(t, r, mkTeam, "train to run on gpu-b", func(rows map[string]cluster.JobPod) bool {
		return rows["train"].Queue.Worker() == "gpu-b"
	})
	job, err := kube.BatchV1().Jobs(mkTeam).Get(t.Context(), "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	job.Status = batchv1.JobStatus{Active: 1, Ready: new(int32(1)), StartTime: &now}
	if _, err := kube.BatchV1().Jobs(mkTeam).UpdateStatus(t.Context(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the worker's status, copied: %v", err)
	}
	rows = waitRows(t, r, mkTeam, "train to run", func(rows map[string]cluster.JobPod) bool {
		return rows["train"].Status == cluster.StatusRunning
	})
	if tr := rows["train"]; tr.Pod != "" || tr.JobStatus != cluster.StatusRunning || tr.Reason != "" || tr.Queue.Origin != "" {
		t.Errorf("train's row: %+v, queue %+v", tr, tr.Queue)
	}
	if cp := rows["copy"]; cp.Queue.Origin != "multikueue" || cp.Queue.Worker() != "" {
		t.Errorf("the worker's copy: %+v", cp.Queue)
	}
	detail, err := r.Job(t.Context(), mkTeam+".train")
	if err != nil || detail.Status != cluster.StatusRunning || detail.Queue.Worker() != "gpu-b" || detail.StartedAt == nil || detail.Reason != "" {
		t.Errorf("the detail (%v): %+v %+v", err, detail, detail.Queue)
	}

	// One cluster's get jobs: CLUSTER first, gpu-b for train, "-" for the others (the copy
	// runs here, where it is real load).
	path := clientConfig(t, "clusters:\n  - name: hub\n    kubeconfig: "+c.Kubeconfig+"\n")
	kubeconfig := []string{"--kubeconfig", c.Kubeconfig}
	out, errOut, code := cliRun(t, append([]string{"get", "jobs", "-n", mkTeam}, kubeconfig...)...)
	if code != 0 || !regexp.MustCompile(`^CLUSTER +JOB ID +NAME`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^gpu-b +<none> +train +`+mkTeam+` +training +Running `).MatchString(out) ||
		!regexp.MustCompile(`(?m)^- +copy-\S+ +copy `).MatchString(out) || !regexp.MustCompile(`(?m)^- +local-\S+ +local `).MatchString(out) {
		t.Errorf("get jobs: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := cliRun(t, append([]string{"get", "jobs", "-n", mkTeam, "-o", "json"}, kubeconfig...)...); !strings.Contains(out, `"cluster": "gpu-b"`) ||
		!strings.Contains(out, `"origin": "multikueue"`) {
		t.Errorf("get jobs -o json:\n%s", out)
	}

	// describe and logs without gpu-b in the config file: what the manager knows, and exit 1
	// with what to add.
	out, errOut, code = cliRun(t, append([]string{"describe", "job", mkTeam + ".train"}, kubeconfig...)...)
	if code != 1 || !regexp.MustCompile(`(?m)^Status: +Running$`).MatchString(out) || !regexp.MustCompile(`(?m)^Runs on: +cluster gpu-b \(MultiKueue\)$`).MatchString(out) ||
		errOut != "error: job "+mkTeam+".train runs on cluster gpu-b (MultiKueue); add gpu-b to clusters: in "+path+" to read its pods\n" {
		t.Errorf("describe job train: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := cliRun(t, append([]string{"describe", "job", mkTeam + ".copy"}, kubeconfig...)...); !regexp.MustCompile(`(?m)^Dispatched by: +MultiKueue of a manager cluster \(origin multikueue\)$`).MatchString(out) {
		t.Errorf("describe job copy:\n%s", out)
	}
	out, errOut, code = cliRun(t, append([]string{"logs", mkTeam + ".train"}, kubeconfig...)...)
	if want := "error: job " + mkTeam + ".train runs on cluster gpu-b (MultiKueue); add gpu-b to clusters: in " + path + " to read its logs\n"; code != 1 || out != "" || errOut != want {
		t.Errorf("logs without gpu-b: exit %d\n%s%s\nwant %s", code, out, errOut, want)
	}

	// An entry gpu-b whose job train is the copy of another Workload (another cluster than
	// the manager's gpu-b) is not read as this job's: exit 1, none of its lines.
	other := workerStub(t, workload+"-other")
	clientConfig(t, "clusters:\n  - name: hub\n    kubeconfig: "+c.Kubeconfig+"\n  - name: gpu-b\n    server: "+other.URL+"\n    token: tok-b\n")
	out, errOut, code = cliRun(t, append([]string{"logs", mkTeam + ".train"}, kubeconfig...)...)
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "error: cluster gpu-b: job "+mkTeam+".train there is the copy of another manager's job (Workload "+workload+"-other, not "+workload+")") {
		t.Errorf("logs of another cluster's copy: exit %d\n%s%s", code, out, errOut)
	}

	// With gpu-b in the config file: logs read there; the fleet lists train once, as the
	// manager's row, and keeps the copy whose manager it does not read.
	worker := workerStub(t, workload)
	clientConfig(t, "clusters:\n  - name: hub\n    kubeconfig: "+c.Kubeconfig+"\n  - name: gpu-b\n    server: "+worker.URL+"\n    token: tok-b\n")
	for _, args := range [][]string{kubeconfig, {"--all-clusters"}} {
		out, errOut, code = cliRun(t, append([]string{"logs", mkTeam + ".train"}, args...)...)
		if code != 0 || out != "[rank-0] step 7 loss 1.25 on gpu-b\n" {
			t.Errorf("logs %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var fleet bytes.Buffer
	code = app.Run(ctx, app.Streams{Out: &fleet, Err: &fleet}, []string{"get", "jobs", "--all-clusters", "-n", mkTeam})
	out = fleet.String()
	if code != 0 || strings.Count(out, " train ") != 1 || strings.Contains(out, "train-0-x7k2p") ||
		!regexp.MustCompile(`(?m)^hub→gpu-b +<none> +train +`+mkTeam+` +training +Running `).MatchString(out) ||
		!regexp.MustCompile(`(?m)^hub +copy-\S+ +copy `).MatchString(out) || !regexp.MustCompile(`(?m)^gpu-b +own-0-abcde +own `).MatchString(out) {
		t.Errorf("get jobs --all-clusters: exit %d\n%s", code, out)
	}
}
