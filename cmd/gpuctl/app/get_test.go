package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
)

func ptrTo[T any](v T) *T { return &v }

func TestPrintJobPods(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	list := cluster.JobPodList{Items: []cluster.JobPod{
		{Pod: "sft-0-x7k2p", JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Status: "Running",
			Phase: "Running", Ready: "1/1", Node: "gpu-a100-0", IP: "10.244.0.7", Rank: ptrTo(0), CreatedAt: now.Add(-5 * time.Minute),
			GPU: 8, Pool: "training-pool", GPUType: "a100-80g", Source: "teams/alice/sft.yaml"},
		{Pod: "sft-1-q9d4w", JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Status: "Pending",
			Reason: "0/5 nodes: insufficient nvidia.com/gpu", Phase: "Pending", Ready: "0/1", Rank: ptrTo(1),
			CreatedAt: now.Add(-5 * time.Minute), GPU: 8, Pool: "training-pool", GPUType: "a100-80g", Source: "teams/alice/sft.yaml"},
		{Pod: "web-6d4f-zx8k2", JobID: "alice.web", Name: "web", Namespace: "alice", Kind: "compute", Status: "CrashLoopBackOff",
			Reason: "container main: the container keeps exiting", Phase: "Running", Ready: "0/1", Node: "cpu-0", IP: "10.244.1.2",
			CreatedAt: now.Add(-2 * time.Hour), Pool: "default"},
		{JobID: "alice.queued", Name: "queued", Namespace: "alice", Kind: "training", Status: "Pending", Reason: "suspended",
			CreatedAt: now.Add(-30 * time.Second), GPU: 4, Pool: "default"},
	}}
	var out bytes.Buffer
	if err := printJobPods(&out, list, "", now); err != nil {
		t.Fatal(err)
	}
	want := `JOB ID           NAME     NAMESPACE   KIND       STATUS                                             READY    NODE         IP           AGE
sft-0-x7k2p      sft      alice       training   Running                                            1/1      gpu-a100-0   10.244.0.7   5m
sft-1-q9d4w      sft      alice       training   Pending (0/5 nodes: insufficient nvidia.com/gpu)   0/1      <none>       <none>       5m
web-6d4f-zx8k2   web      alice       compute    CrashLoopBackOff                                   0/1      cpu-0        10.244.1.2   2h
<none>           queued   alice       training   Pending (suspended)                                <none>   <none>       <none>       30s
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	_ = printJobPods(&out, list, outputWide, now)
	if first := strings.SplitN(out.String(), "\n", 3)[1]; !strings.HasSuffix(first, "5m    8      training-pool   a100-80g   teams/alice/sft.yaml   <none>   <none>") {
		t.Errorf("wide row %q", first)
	}
	out.Reset()
	_ = printJobPods(&out, list, outputName, now)
	if out.String() != "alice.sft\nalice.web\nalice.queued\n" {
		t.Errorf("-o name, one line per job:\n%s", out.String())
	}
	out.Reset()
	_ = printJobPods(&out, list, outputJSON, now)
	if !strings.Contains(out.String(), `"reason": "0/5 nodes: insufficient nvidia.com/gpu"`) || !strings.Contains(out.String(), `"rank": 1`) {
		t.Errorf("-o json:\n%s", out.String())
	}
}

// A job that Kueue holds back: STATUS Queued (or Preempted) alone, and in -o wide its place in
// its queue (QUEUE) and what it waits for (REASON); a reason that STATUS shows is not repeated.
func TestPrintQueuedJobPods(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	queued := &cluster.QueueState{ClusterQueue: "alice", State: cluster.QueueQueued, Position: 3, Pending: 8,
		WaitsFor: &cluster.QueueWait{Resource: "nvidia.com/gpu", Need: "4", Display: "a100-80g", Flavor: "training-pool",
			Used: "8", Nominal: "8", CohortLending: "0"}}
	preempted := &cluster.QueueState{ClusterQueue: "alice", State: cluster.QueuePreempted, Position: 1, Pending: 8,
		PreemptedBy: &cluster.Preemptor{JobID: "bob.big", Namespace: "bob", Reason: "reclamation within the cohort"}}
	admitted := &cluster.QueueState{ClusterQueue: "alice", State: cluster.QueueAdmitted, Flavors: []string{"training-pool"}}
	list := cluster.JobPodList{Items: []cluster.JobPod{
		{JobID: "alice.q", Name: "q", Namespace: "alice", Kind: "training", Status: cluster.StatusQueued, Reason: queued.Summary(),
			CreatedAt: now.Add(-time.Minute), GPU: 4, Pool: "training-pool", Queue: queued},
		{JobID: "alice.p", Name: "p", Namespace: "alice", Kind: "training", Status: cluster.StatusPreempted, Reason: preempted.Summary(),
			CreatedAt: now.Add(-time.Minute), GPU: 4, Pool: "training-pool", Queue: preempted},
		{Pod: "r-0", JobID: "alice.r", Name: "r", Namespace: "alice", Kind: "training", Status: "Pending", Reason: "0/5 nodes: taints",
			Phase: "Pending", Ready: "0/1", CreatedAt: now.Add(-time.Minute), GPU: 4, Pool: "training-pool", Queue: admitted},
	}}
	var out bytes.Buffer
	if err := printJobPods(&out, list, "", now); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(out.String(), "\n")
	if f := strings.Fields(rows[1]); f[4] != "Queued" || f[5] != "<none>" {
		t.Errorf("a queued job's row: %q", rows[1])
	}
	if f := strings.Fields(rows[2]); f[4] != "Preempted" {
		t.Errorf("a preempted job's row: %q", rows[2])
	}
	out.Reset()
	_ = printJobPods(&out, list, outputWide, now)
	rows = strings.Split(out.String(), "\n")
	for i, want := range []string{
		"alice #3   #3 in alice: waits for 4 × a100-80g in training-pool, team alice at 8/8, cohort lending 0",
		"alice #1   preempted by bob.big (reclamation within the cohort); #1 in alice",
		"alice      <none>",
	} {
		if !strings.HasSuffix(strings.TrimRight(rows[i+1], " "), want) {
			t.Errorf("wide row %d:\n%q\nwant it to end with\n%q", i+1, rows[i+1], want)
		}
	}
	if !strings.Contains(rows[3], "Pending (0/5 nodes: taints)") {
		t.Errorf("wide row of a pending pod keeps its reason in STATUS: %q", rows[3])
	}
}

func TestTableKeepsItsColumnsForLaterRows(t *testing.T) {
	var out bytes.Buffer
	tbl := &table{}
	_ = tbl.write(&out, []string{"NAME", "STATUS", "AGE"}, []string{"a-long-name", "Running", "1m"})
	_ = tbl.write(&out, []string{"b", "Completed", "2m"})
	want := "NAME          STATUS    AGE\na-long-name   Running   1m\nb             Completed   2m\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
}

func TestPrintPoolsNodesQuotas(t *testing.T) {
	var out bytes.Buffer
	_ = printPools(&out, cluster.PoolList{Items: []cluster.PoolSummary{
		{Name: "default", Status: "active", NodeCount: 2, GPUTotal: 4, GPUUsed: 1, GPUFree: 3, GPUType: []string{"t4-16g"}},
		{Name: "training-pool", Status: "active", Description: "for training", NodeCount: 2, GPUTotal: 16, GPUUsed: 16, GPUType: []string{"a100-80g", "h100-80g"}},
	}}, "")
	want := "NAME            NODES   GPU TYPE            GPUS   USED   FREE\n" +
		"default         2       t4-16g              4      1      3\n" +
		"training-pool   2       a100-80g,h100-80g   16     16     0\n"
	if out.String() != want {
		t.Errorf("pools:\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	_ = printNodes(&out, cluster.NodeList{Items: []cluster.NodeSummary{
		{NodeName: "gpu-1", Status: "Ready", Unschedulable: true, GPUTotal: 8, GPUUsed: 2, GPUType: "a100-80g", Pool: "training-pool",
			CPU: "128", Memory: "1Ti", G8sLabels: []cluster.Label{{Key: "g8s.host/gpu-type", Value: "a100-80g"}, {Key: "g8s.host/pool", Value: "training-pool"}}},
	}}, outputWide)
	want = "NAME    POOL            GPU TYPE   GPUS   USED   STATUS                     CPU   MEMORY   LABELS\n" +
		"gpu-1   training-pool   a100-80g   8      2      Ready,SchedulingDisabled   128   1Ti      g8s.host/gpu-type=a100-80g,g8s.host/pool=training-pool\n"
	if out.String() != want {
		t.Errorf("nodes -o wide:\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	_ = printQuotas(&out, cluster.QuotaList{Items: []cluster.Quota{
		{User: "alice", Hard: cluster.QuotaResources{GPU: ptrTo[int64](8), CPU: ptrTo(64.0), Memory: ptrTo("256Gi")},
			Used:  cluster.QuotaResources{GPU: ptrTo[int64](6), CPU: ptrTo(12.5), Memory: ptrTo("64Gi")},
			Usage: cluster.QuotaUsage{GPU: ptrTo(75.0), CPU: ptrTo(19.5), Memory: ptrTo(25.0)}},
		{User: "bob", Hard: cluster.QuotaResources{GPU: ptrTo[int64](2)}, Used: cluster.QuotaResources{GPU: ptrTo[int64](3)},
			Usage: cluster.QuotaUsage{GPU: ptrTo(150.0)}},
	}}, outputWide)
	want = "TEAM    GPU   CPU       MEMORY       GPU USE\n" +
		"alice   6/8   12.5/64   64Gi/256Gi   [########--] 75%\n" +
		"bob     3/2   <none>    <none>       [##########] 150%\n"
	if out.String() != want {
		t.Errorf("quotas -o wide:\n%s\nwant\n%s", out.String(), want)
	}
}

func TestDescribeJob(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	created := now.Add(-10 * time.Minute)
	d := cluster.JobDescription{
		Job: cluster.JobDetail{JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Source: "teams/alice/sft.yaml",
			Status: "Failed", Pool: "training-pool", Priority: "high", CreatedAt: created,
			Resources:    cluster.JobResources{GPU: 8, GPUType: "a100-80g", CPU: 32, Memory: "128Gi", Pods: 2, GPUTotal: 16},
			K8sResources: cluster.K8sResources{Kind: "Job", JobName: "sft"}},
		Pods: []cluster.JobPod{{Pod: "sft-0-x7k2p", Status: "OOMKilled", Reason: "container main: out of memory: raise resources.memory; exit code 137",
			Ready: "0/1", Node: "gpu-1", IP: "10.244.0.7", Rank: ptrTo(0), CreatedAt: created}},
		Events:   []cluster.Event{},
		Revision: "4f9c2a71d0e8b3c5a6f70000",
	}
	var out bytes.Buffer
	if err := describeJob(&out, d, now, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Status:      Failed\nReason:      container main: out of memory: raise resources.memory; exit code 137\n",
		"Source:      teams/alice/sft.yaml\nRevision:    4f9c2a71d0e8\n",
		"Resources:   8 GPUs (a100-80g), 32 CPU, 128Gi memory per pod × 2 pods = 16 GPUs\n",
		"Created:     2025-01-01T11:50:00Z (10m ago)\n",
		"  sft-0-x7k2p (rank 0)   OOMKilled   0/1     0          gpu-1   10.244.0.7   10m   container main: out of memory",
		"Events:\n  <none>\nDrift:\n  <none>\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "Started:") || strings.Contains(out.String(), "Description:") {
		t.Errorf("empty fields are left out:\n%s", out.String())
	}
}

func TestGetWatchNeedsATable(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(Streams{Out: &out, Err: &errOut})
	cmd.SetArgs([]string{"get", "jobs", "-w", "-o", "json", "--kubeconfig", "/nonexistent"})
	if err := cmd.Execute(); Code(err) != ExitTrouble || !strings.Contains(err.Error(), "--watch prints a table") {
		t.Errorf("get jobs -w -o json: %v (exit %d)", err, Code(err))
	}
}

// kueueQuota is a team's quota from its ClusterQueue: 12 of 8 GPUs in training-pool (4
// borrowed, borrowing limit 4, lending limit 2), 1 of 2 in default.
func kueueQuota() cluster.Quota {
	return cluster.Quota{User: "alice", Namespace: "alice", Name: "team-quota",
		Hard:  cluster.QuotaResources{GPU: ptrTo[int64](10), CPU: ptrTo(72.0), Memory: ptrTo("288Gi")},
		Used:  cluster.QuotaResources{GPU: ptrTo[int64](13), CPU: ptrTo(50.0), Memory: ptrTo("128Gi")},
		Usage: cluster.QuotaUsage{GPU: ptrTo(130.0), CPU: ptrTo(69.4), Memory: ptrTo(44.4)},
		Queue: &cluster.QuotaQueue{ClusterQueue: "alice", Cohort: "gpuctl", Pending: 2, Admitted: 3, Pools: []cluster.QuotaPool{
			{Pool: "training-pool", Nominal: cluster.QuotaResources{GPU: ptrTo[int64](8), CPU: ptrTo(64.0), Memory: ptrTo("256Gi")},
				Used:           cluster.QuotaResources{GPU: ptrTo[int64](12), CPU: ptrTo(48.0), Memory: ptrTo("128Gi")},
				Usage:          cluster.QuotaUsage{GPU: ptrTo(150.0)},
				Borrowed:       cluster.QuotaResources{GPU: ptrTo[int64](4), CPU: ptrTo(0.0), Memory: ptrTo("0")},
				BorrowingLimit: cluster.QuotaResources{GPU: ptrTo[int64](4)}, LendingLimit: cluster.QuotaResources{GPU: ptrTo[int64](2)}},
			{Pool: "default", Nominal: cluster.QuotaResources{GPU: ptrTo[int64](2), CPU: ptrTo(8.0), Memory: ptrTo("32Gi")},
				Used:     cluster.QuotaResources{GPU: ptrTo[int64](1), CPU: ptrTo(2.0), Memory: ptrTo("0")},
				Usage:    cluster.QuotaUsage{GPU: ptrTo(50.0)},
				Borrowed: cluster.QuotaResources{GPU: ptrTo[int64](0), CPU: ptrTo(0.0), Memory: ptrTo("0")}},
		}}}
}

// A ClusterQueue has a row per pool with POOL and BORROWED, and -o wide its limits and
// workloads; a ResourceQuota beside it has no pool; -o name names each team once.
func TestPrintKueueQuotas(t *testing.T) {
	list := cluster.QuotaList{Items: []cluster.Quota{kueueQuota(),
		{User: "bob", Hard: cluster.QuotaResources{GPU: ptrTo[int64](2)}, Used: cluster.QuotaResources{GPU: ptrTo[int64](1)}, Usage: cluster.QuotaUsage{GPU: ptrTo(50.0)}}}}
	tests := map[string]string{
		"": "TEAM    POOL            GPU    CPU      MEMORY        BORROWED\n" +
			"alice   training-pool   12/8   48/64    128Gi/256Gi   gpu=4\n" +
			"alice   default         1/2    2/8      0/32Gi        <none>\n" +
			"bob     <none>          1/2    <none>   <none>        <none>\n",
		outputWide: "TEAM    POOL            GPU    CPU      MEMORY        BORROWED   GPU USE             BORROWING LIMIT   LENDING LIMIT   PENDING   ADMITTED\n" +
			"alice   training-pool   12/8   48/64    128Gi/256Gi   gpu=4      [##########] 150%   gpu=4             gpu=2           2         3\n" +
			"alice   default         1/2    2/8      0/32Gi        <none>     [#####-----] 50%    <none>            <none>          2         3\n" +
			"bob     <none>          1/2    <none>   <none>        <none>     [#####-----] 50%    <none>            <none>          <none>    <none>\n",
		outputName: "alice\nbob\n",
	}
	for output, want := range tests {
		var out bytes.Buffer
		if err := printQuotas(&out, list, output); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("-o %q:\n%s\nwant\n%s", output, out.String(), want)
		}
	}
}

func TestDescribeKueueQuota(t *testing.T) {
	var out bytes.Buffer
	if err := describeQuota(&out, kueueQuota()); err != nil {
		t.Fatal(err)
	}
	want := "Team:        alice\n" +
		"Quota:       team-quota (ClusterQueue alice, cohort gpuctl)\n" +
		"GPU:         13/10 [##########] 130%\n" +
		"CPU:         50/72 [#######---] 69.4%\n" +
		"Memory:      128Gi/288Gi [####------] 44.4%\n" +
		"Workloads:   2 pending, 3 admitted\n" +
		"Pools:\n" +
		"  POOL            GPU    CPU     MEMORY        BORROWED   BORROWING LIMIT   LENDING LIMIT\n" +
		"  training-pool   12/8   48/64   128Gi/256Gi   gpu=4      gpu=4             gpu=2\n" +
		"  default         1/2    2/8     0/32Gi        <none>     <none>            <none>\n" +
		"Use by job:\n" +
		"  <none>\n"
	if out.String() != want {
		t.Errorf("describe quota:\n%s\nwant\n%s", out.String(), want)
	}
}
