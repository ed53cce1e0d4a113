package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
)

// A job that Kueue's MultiKueue dispatched from the manager cluster hub to the worker gpu-b,
// against stubs of both daemons' APIs: the manager has the job without pods (its queue state
// names gpu-b), the worker has its copy (origin label) with a pod, its log and its events.

// mkJobID is the dispatched job.
const mkJobID = "alice.train"

// bearerJSON answers v as JSON, or 401 without the token.
func bearerJSON(token string, v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid bearer token","code":401}`)
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
}

// managerAPI is the manager's API: alice.train, dispatched to gpu-b (Running, as MultiKueue
// copied it, without pods), and alice.local, which runs in the manager. Its log of alice.train
// is the read model's answer for a job of another cluster.
func managerAPI(t *testing.T) *httptest.Server {
	t.Helper()
	q := &cluster.QueueState{Workload: "job-train-1", ClusterQueue: "alice", State: cluster.QueueAdmitted, Flavors: []string{"default"}, Cluster: "gpu-b"}
	rows := cluster.JobPodList{Items: []cluster.JobPod{
		{JobID: mkJobID, Name: "train", Namespace: "alice", Kind: "training", Status: cluster.StatusRunning, JobStatus: cluster.StatusRunning, Queue: q},
		{Pod: "local-0-abcde", JobID: "alice.local", Name: "local", Namespace: "alice", Kind: "training", Status: "Running", Node: "hub-node-0"},
	}}
	job := cluster.JobDetail{JobID: mkJobID, Name: "train", Namespace: "alice", Kind: "training", Status: cluster.StatusRunning, Queue: q,
		K8sResources: cluster.K8sResources{Kind: "Job", JobName: "train", Pods: []string{}}}
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/jobpods", bearerJSON("tok-SECRET-hub", rows))
	mux.Handle("GET /api/v1/jobs/"+mkJobID, bearerJSON("tok-SECRET-hub", job))
	mux.Handle("GET /api/v1/jobs/"+mkJobID+"/description", bearerJSON("tok-SECRET-hub", cluster.JobDescription{Job: job,
		Pods: rows.Items[:1], Events: []cluster.Event{{LastSeen: time.Now().Add(-time.Hour), Type: "Normal", Reason: "Admitted", Object: "job/train", Message: "admitted by hub"}}}))
	mux.HandleFunc("GET /api/v1/jobs/"+mkJobID+"/logs", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": "x", "code": 404,
			"noLogs": cluster.NoLogsError{JobID: mkJobID, Status: cluster.StatusRunning, Cluster: "gpu-b", Workload: "job-train-1"}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// workerAPI is the worker gpu-b's API: MultiKueue's copy of alice.train (origin multikueue,
// under the Workload of the manager's name, which MultiKueue made there) with its pod, and
// alice.other, a job of gpu-b's own.
func workerAPI(t *testing.T) *httptest.Server {
	t.Helper()
	return workerAPIOf(t, &cluster.QueueState{Workload: "job-train-1", ClusterQueue: "alice", State: cluster.QueueAdmitted, Origin: "multikueue"})
}

// workerAPIOf is workerAPI with q as the queue state of its job alice.train.
func workerAPIOf(t *testing.T, q *cluster.QueueState) *httptest.Server {
	t.Helper()
	pod := cluster.JobPod{Pod: "train-0-x7k2p", JobID: mkJobID, Name: "train", Namespace: "alice", Kind: "training", Status: "Running",
		Ready: "1/1", Node: "gpu-b-node-3", Queue: q}
	rows := cluster.JobPodList{Items: []cluster.JobPod{pod,
		{Pod: "other-0-qqqqq", JobID: "alice.other", Name: "other", Namespace: "alice", Kind: "training", Status: "Running", Node: "gpu-b-node-1"}}}
	job := cluster.JobDetail{JobID: mkJobID, Name: "train", Namespace: "alice", Kind: "training", Status: cluster.StatusRunning, Queue: q,
		K8sResources: cluster.K8sResources{Kind: "Job", JobName: "train", Pods: []string{pod.Pod}}}
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/jobpods", bearerJSON("tok-SECRET-b", rows))
	mux.Handle("GET /api/v1/jobs/"+mkJobID, bearerJSON("tok-SECRET-b", job))
	mux.Handle("GET /api/v1/jobs/"+mkJobID+"/description", bearerJSON("tok-SECRET-b", cluster.JobDescription{Job: job, Pods: rows.Items[:1],
		Events: []cluster.Event{{LastSeen: time.Now().Add(-time.Minute), Type: "Normal", Reason: "Started", Object: "pod/" + pod.Pod, Message: "started on gpu-b"}}}))
	mux.HandleFunc("GET /api/v1/jobs/"+mkJobID+"/logs", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-SECRET-b" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, `{"pod":"train-0-x7k2p","container":"main","prefix":"rank-0","text":"step 1 on gpu-b"}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// mkClusters writes the config file of hub and, when withWorker, gpu-b; it returns the path.
func mkClusters(t *testing.T, hub, worker *httptest.Server, withWorker bool) string {
	t.Helper()
	cfg := "clusters:\n  - name: hub\n    server: " + hub.URL + "\n    token: tok-SECRET-hub\n"
	if withWorker {
		cfg += "  - name: gpu-b\n    server: " + worker.URL + "\n    token: tok-SECRET-b\n"
	}
	return fleetConfig(t, cfg)
}

// TestMultiKueueFleetJobs: one cluster's get jobs has CLUSTER (the worker, "-" for a job that
// runs there) when a job runs in a worker; the fleet lists the dispatched job once, as the
// manager's row "hub→gpu-b"; the worker alone still lists its copy.
func TestMultiKueueFleetJobs(t *testing.T) {
	hub, worker := managerAPI(t), workerAPI(t)
	mkClusters(t, hub, worker, true)

	out, errOut, code := runDriftCommand(t, "get", "jobs", "--server", hub.URL, "--token", "tok-SECRET-hub")
	if code != 0 || !regexp.MustCompile(`^CLUSTER +JOB ID +NAME`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^gpu-b +<none> +train +alice +training +Running `).MatchString(out) ||
		!regexp.MustCompile(`(?m)^- +local-0-abcde +local `).MatchString(out) {
		t.Errorf("get jobs of the manager: exit %d\n%s%s", code, out, errOut)
	}
	out, _, _ = runDriftCommand(t, "get", "jobs", "--server", hub.URL, "--token", "tok-SECRET-hub", "-o", "json")
	if !strings.Contains(out, `"cluster": "gpu-b"`) {
		t.Errorf("-o json lacks the worker:\n%s", out)
	}

	out, errOut, code = runDriftCommand(t, "get", "jobs", "--all-clusters")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || strings.Count(out, " train ") != 1 ||
		!regexp.MustCompile(`(?m)^hub→gpu-b +<none> +train +alice +training +Running `).MatchString(out) ||
		!regexp.MustCompile(`(?m)^gpu-b +other-0-qqqqq `).MatchString(out) || !regexp.MustCompile(`(?m)^hub +local-0-abcde `).MatchString(out) ||
		strings.Contains(out, "train-0-x7k2p") {
		t.Errorf("get jobs --all-clusters lists the dispatched job once, as the manager's: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runDriftCommand(t, "get", "jobs", "--clusters", "gpu-b")
	if code != 0 || !regexp.MustCompile(`(?m)^gpu-b +train-0-x7k2p +train `).MatchString(out) {
		t.Errorf("the worker alone lists its copy: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, out, errOut)
}

// TestMultiKueueLogs: logs of the dispatched job read in the worker through the config file's
// entry of its name, from the manager (--server) as from the fleet (which finds the job in
// both and keeps the manager's); without the entry, exit 1 and the line that says what to add.
func TestMultiKueueLogs(t *testing.T) {
	hub, worker := managerAPI(t), workerAPI(t)
	mkClusters(t, hub, worker, true)
	for _, args := range [][]string{{"--server", hub.URL, "--token", "tok-SECRET-hub"}, {"--all-clusters"}} {
		out, errOut, code := runDriftCommand(t, append([]string{"logs", mkJobID}, args...)...)
		if code != 0 || out != "[rank-0] step 1 on gpu-b\n" {
			t.Errorf("logs %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}

	path := mkClusters(t, hub, worker, false)
	out, errOut, code := runDriftCommand(t, "logs", mkJobID, "--server", hub.URL, "--token", "tok-SECRET-hub")
	want := "error: job alice.train runs on cluster gpu-b (MultiKueue); add gpu-b to clusters: in " + path + " to read its logs\n"
	if code != ExitFailed || out != "" || errOut != want {
		t.Errorf("the worker not in the config file: exit %d\n%s%s\nwant %s", code, out, errOut, want)
	}
	noSecret(t, out, errOut)
}

// TestMultiKueueDescribe: describe job says where the job runs and shows the worker's pods and
// events; without the worker in the config file it shows what the manager knows, and exits 1
// with the line that says what to add.
func TestMultiKueueDescribe(t *testing.T) {
	hub, worker := managerAPI(t), workerAPI(t)
	mkClusters(t, hub, worker, true)
	out, errOut, code := runDriftCommand(t, "describe", "job", mkJobID, "--server", hub.URL, "--token", "tok-SECRET-hub")
	if code != 0 || !regexp.MustCompile(`(?m)^Runs on: +cluster gpu-b \(MultiKueue\)$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^  train-0-x7k2p +Running +1/1 +0 +gpu-b-node-3 `).MatchString(out) ||
		!strings.Contains(out, "admitted by hub") || !strings.Contains(out, "started on gpu-b") ||
		strings.Index(out, "admitted by hub") > strings.Index(out, "started on gpu-b") {
		t.Errorf("describe with the worker: exit %d\n%s%s", code, out, errOut)
	}

	path := mkClusters(t, hub, worker, false)
	out, errOut, code = runDriftCommand(t, "describe", "job", mkJobID, "--server", hub.URL, "--token", "tok-SECRET-hub")
	if code != ExitFailed || !strings.Contains(out, "Runs on:") || !strings.Contains(out, "Pods:\n  <none>") ||
		errOut != "error: job alice.train runs on cluster gpu-b (MultiKueue); add gpu-b to clusters: in "+path+" to read its pods\n" {
		t.Errorf("describe without the worker: exit %d\n%s%s", code, out, errOut)
	}
}

// TestMultiKueueWorkerIsTheCopy: the worker's name comes from the manager's Workload, and the
// config file's entry of that name may read another cluster (named otherwise than the
// manager's MultiKueueClusters, or a forged status.clusterName). Its job of the same id that is
// not MultiKueue's copy, or the copy of another manager's Workload, is not shown as this job's:
// logs prints none of its lines, describe none of its pods, and both exit 1 naming the cluster.
func TestMultiKueueWorkerIsTheCopy(t *testing.T) {
	for name, q := range map[string]*cluster.QueueState{
		"not a copy":                   {Workload: "job-train-1", ClusterQueue: "alice", State: cluster.QueueAdmitted},
		"no Workload":                  nil,
		"a copy of another's Workload": {Workload: "job-train-9", ClusterQueue: "alice", State: cluster.QueueAdmitted, Origin: "multikueue"},
	} {
		hub, worker := managerAPI(t), workerAPIOf(t, q)
		mkClusters(t, hub, worker, true)
		out, errOut, code := runDriftCommand(t, "logs", mkJobID, "--server", hub.URL, "--token", "tok-SECRET-hub")
		if code != ExitFailed || out != "" || !strings.HasPrefix(errOut, "error: cluster gpu-b: job alice.train there is ") {
			t.Errorf("%s: logs: exit %d\n%s%s", name, code, out, errOut)
		}
		out, errOut, code = runDriftCommand(t, "describe", "job", mkJobID, "--server", hub.URL, "--token", "tok-SECRET-hub")
		if code != ExitFailed || strings.Contains(out, "train-0-x7k2p") || strings.Contains(out, "started on gpu-b") ||
			!strings.Contains(out, "Runs on:") || !strings.HasPrefix(errOut, "error: cluster gpu-b: job alice.train there is ") {
			t.Errorf("%s: describe: exit %d\n%s%s", name, code, out, errOut)
		}
		noSecret(t, out, errOut)
	}
}

// TestDropWorkerCopiesMatchesTheWorkload: the fleet leaves out the worker's copy of the
// manager's job (same id, the Workload's name that MultiKueue gives the copy), and keeps a job
// of that id in the entry of the worker's name that is the copy of another Workload.
func TestDropWorkerCopiesMatchesTheWorkload(t *testing.T) {
	sent := &cluster.QueueState{Workload: "job-train-1", Cluster: "gpu-b"}
	for workload, kept := range map[string]bool{"job-train-1": false, "job-train-9": true} {
		answers := []clusterAnswer[cluster.JobPod]{
			{cluster: "hub", items: []cluster.JobPod{{JobID: mkJobID, Queue: sent}}},
			{cluster: "gpu-b", items: []cluster.JobPod{{JobID: mkJobID, Pod: "train-0-x7k2p", Queue: &cluster.QueueState{Workload: workload, Origin: "multikueue"}}}},
		}
		dropWorkerCopies(answers, func(r cluster.JobPod) (string, *cluster.QueueState) { return r.JobID, r.Queue })
		if len(answers[0].items) != 1 || (len(answers[1].items) == 1) != kept {
			t.Errorf("worker's Workload %s: hub %d rows, gpu-b %d rows; want gpu-b's kept: %v", workload, len(answers[0].items), len(answers[1].items), kept)
		}
	}
}

// TestPrintJobPodsWorkerColumn: CLUSTER comes first only when a row's job runs in a worker.
func TestPrintJobPodsWorkerColumn(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	list := cluster.JobPodList{Items: []cluster.JobPod{
		{JobID: mkJobID, Name: "train", Namespace: "alice", Kind: "training", Status: "Running", CreatedAt: now.Add(-time.Minute),
			Queue: &cluster.QueueState{State: cluster.QueueAdmitted, ClusterQueue: "alice", Cluster: "gpu-b"}},
		{Pod: "local-0-abcde", JobID: "alice.local", Name: "local", Namespace: "alice", Kind: "training", Status: "Running", CreatedAt: now.Add(-time.Minute)},
	}}
	var out bytes.Buffer
	if err := printJobPods(&out, list, "", now); err != nil {
		t.Fatal(err)
	}
	want := `CLUSTER   JOB ID          NAME    NAMESPACE   KIND       STATUS    READY    NODE     IP       AGE
gpu-b     <none>          train   alice       training   Running   <none>   <none>   <none>   1m
-         local-0-abcde   local   alice       training   Running   <none>   <none>   <none>   1m
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	list.Items = list.Items[1:]
	_ = printJobPods(&out, list, "", now)
	if strings.HasPrefix(out.String(), "CLUSTER") {
		t.Errorf("a CLUSTER column without a worker:\n%s", out.String())
	}
}
