package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"golang.org/x/sync/errgroup"
)

// JobPodList is the rows of `gpuctl get jobs`: one per pod of each job, and one for each job
// that has no pod (yet, or any more).
type JobPodList struct {
	// Items are by namespace, job name, then rank (indexed Jobs), creation and pod name.
	Items []JobPod `json:"items"`
}

// JobPod is one pod of a job, or a job without pods (Pod is then "").
type JobPod struct {
	// Pod is the pod's name, the JOB ID column; "" for a job with no pod.
	Pod string `json:"pod"`
	// JobID is "<namespace>.<name>"; Name is the gpuctl job name.
	JobID     string `json:"jobId"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Kind is the gpuctl kind: training, inference, notebook or compute.
	Kind string `json:"kind"`
	// Status is the pod's status in words (PodStatus: Running, Pending, CrashLoopBackOff,
	// OOMKilled, Completed, ...), or the job's status for a job with no pod.
	Status string `json:"status"`
	// Reason explains Status in one line (PodReason; for a job with no pod why it has none,
	// e.g. "suspended"), or is "".
	Reason string `json:"reason,omitempty"`
	// Phase is the pod's phase (Pending, Running, Succeeded, Failed); "" for a job with no pod.
	Phase string `json:"phase"`
	// JobStatus is the job's status: Pending, Running, Partially Running, Succeeded or Failed.
	JobStatus string `json:"jobStatus"`
	// JobReason says why the job stands where it does, in words (the same on each row of
	// the job): "Error: exit code 1", "Preempted by default/sft (gpuctl-high), retried
	// (attempt 2 of 4)", "Preempted by bob.big (...), requeued at #2" (see JobDetail.Reason);
	// "" for a job that runs or ran without a hitch.
	JobReason string `json:"jobReason,omitempty"`
	// Ready is "<ready containers>/<containers>"; "" for a job with no pod. Restarts sums
	// the containers' restarts.
	Ready    string `json:"ready"`
	Restarts int32  `json:"restarts"`
	// Node and IP are the pod's node and IP, "" until it has them.
	Node string `json:"node"`
	IP   string `json:"ip"`
	// Rank is the completion index of a pod of an indexed Job (a rank of a multi-node
	// training); null for other pods.
	Rank *int `json:"rank"`
	// Queue is the place in Kueue's queue of the pod's Workload (a Deployment's pod) or of its
	// job's; null when Kueue does not queue it. A queued job or pod has Status Queued (or
	// Preempted) and its place as Reason: "#3 in alice: waits for 4 × a100-80g in
	// training-pool, team alice at 8/8, cohort lending 0".
	Queue *QueueState `json:"queue,omitempty"`
	// CreatedAt is when the pod was created (the job, for a job with no pod).
	CreatedAt time.Time `json:"createdAt"`
	// GPU is the pod's nvidia.com/gpu request (what each pod of the job requests, for a job
	// with no pod); Pool, GPUType and Source are the job's (see JobDetail).
	GPU     int64  `json:"gpu"`
	Pool    string `json:"pool"`
	GPUType string `json:"gpuType"`
	Source  string `json:"source"`
}

// JobPodFilter selects the rows of JobPods. Its zero value selects every row.
type JobPodFilter struct {
	// Namespace is the jobs' namespace; "" for all.
	Namespace string
	// Kind and Pool select jobs as JobFilter's do.
	Kind string
	Pool string
	// Status selects rows by their status word (Running, CrashLoopBackOff, ...), their
	// pod's phase (Pending, Running, Succeeded, Failed) or, for a job with no pod, the job's
	// status; any case, with or without a space, dash or underscore. "" for any.
	Status string
	// Selector is a label selector (kubectl's -l syntax) on the jobs' labels; "" for any.
	Selector string
}

// selector checks the filter and returns the label selector of its jobs.
func (f JobPodFilter) selector() (labels.Selector, error) {
	if err := checkKindPool(f.Kind, f.Pool); err != nil {
		return nil, err
	}
	sel := workloadSelector(f.Kind, f.Pool)
	if f.Selector != "" {
		user, err := labels.Parse(f.Selector)
		if err != nil {
			return nil, filterErrorf("selector", "%v", err)
		}
		reqs, _ := user.Requirements()
		sel = sel.Add(reqs...)
	}
	return sel, nil
}

// matches reports whether a row passes the status filter.
func (f JobPodFilter) matches(row JobPod) bool {
	if f.Status == "" {
		return true
	}
	want := normalizeWord(f.Status)
	return normalizeWord(row.Status) == want || row.Phase != "" && normalizeWord(row.Phase) == want
}

// JobPods lists the rows of the jobs that the filter selects: a job's pods, or one row for a
// job that has none. A filter value it refuses is a *FilterError.
func (r *Reader) JobPods(ctx context.Context, f JobPodFilter) (JobPodList, error) {
	sel, err := f.selector()
	if err != nil {
		return JobPodList{}, err
	}
	// The workloads and the pods at once: through a kubeconfig each LIST is a round trip.
	var ws []workload
	var pods []*corev1.Pod
	var qs *queues
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		qs, err = r.loadQueues(gctx, f.Namespace)
		return err
	})
	g.Go(func() (err error) {
		ws, err = r.listWorkloadsIn(gctx, f.Namespace, sel)
		return err
	})
	g.Go(func() (err error) {
		if pods, err = r.ObjectSource().Pods(gctx, f.Namespace, managedPods, nil); err != nil {
			err = fmt.Errorf("list pods: %w", err)
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return JobPodList{}, err
	}
	byNS := byNamespace(pods)
	qs.attach(ws, byNS)
	hist, err := r.jobHistories(ctx, ws, byNS)
	if err != nil {
		return JobPodList{}, err
	}
	return jobPodRows(ws, byNS, f, hist), nil
}

// managedPods selects the pods of gpuctl's workloads (their templates carry the label).
var managedPods = labels.SelectorFromSet(labels.Set{keys.ManagedBy: keys.ManagedByValue})

// jobPodRows makes the rows of the workloads (in their order) from the pods by namespace,
// keeping those that pass the filter's status, with the reasons of the jobs (the histories of
// their namespaces; empty without events at hand).
func jobPodRows(ws []workload, byNS map[string][]*corev1.Pod, f JobPodFilter, hist histories) JobPodList {
	out := JobPodList{Items: []JobPod{}}
	for _, w := range ws {
		for _, row := range w.rows(byNS[w.meta.Namespace]) {
			if f.matches(row) {
				out.Items = append(out.Items, row)
			}
		}
	}
	setJobReasons(ws, byNS, hist, out.Items)
	return out
}

// rows are the workload's rows: one per pod that its selector selects among pods (of its
// namespace), or one for the workload itself when there is none.
func (w workload) rows(pods []*corev1.Pod) []JobPod {
	var own []*corev1.Pod
	for _, p := range pods {
		if w.selector.Matches(labels.Set(p.Labels)) {
			own = append(own, p)
		}
	}
	base := JobPod{JobID: w.id(), Name: w.meta.Name, Namespace: w.meta.Namespace, Kind: w.kind,
		JobStatus: w.status, Pool: w.pool(), GPUType: w.gpuType(), Source: w.meta.Annotations[keys.Source]}
	if len(own) == 0 {
		row := base
		row.Status, row.Reason, row.Queue = w.status, w.note, w.queue
		row.CreatedAt = w.meta.CreationTimestamp.UTC()
		row.GPU = requestsOf(&w.template.Spec).gpu
		return []JobPod{row}
	}
	sortPods(own)
	rows := make([]JobPod, 0, len(own))
	for _, p := range own {
		row := base
		row.Pod, row.Phase = p.Name, string(p.Status.Phase)
		row.Status, row.Reason = podState(p)
		w.queuedPodRow(&row, p)
		row.Ready, row.Restarts = readiness(p)
		row.Node, row.IP = p.Spec.NodeName, p.Status.PodIP
		if n, ok := rank(p); ok {
			row.Rank = &n
		}
		row.CreatedAt = p.CreationTimestamp.UTC()
		row.GPU = requestsOf(&p.Spec).gpu
		rows = append(rows, row)
	}
	return rows
}

// readiness is kubectl's READY ("<ready>/<containers>") and the containers' restarts.
func readiness(p *corev1.Pod) (string, int32) {
	ready, restarts := 0, int32(0)
	for _, c := range p.Status.ContainerStatuses {
		if c.Ready {
			ready++
		}
		restarts += c.RestartCount
	}
	return strconv.Itoa(ready) + "/" + strconv.Itoa(len(p.Spec.Containers)), restarts
}
