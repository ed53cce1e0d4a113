package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"golang.org/x/sync/errgroup"
)

// JobList is a page of jobs, the answer of GET /api/v1/jobs.
type JobList struct {
	// Total counts the jobs that match the filter, on all pages. Page and PageSize are the
	// filter's page (page 1 and size 0 when not paged).
	Total    int          `json:"total"`
	Page     int          `json:"page"`
	PageSize int          `json:"pageSize"`
	Items    []JobSummary `json:"items"`
}

// JobSummary is one job of a JobList.
type JobSummary struct {
	// JobID is "<namespace>.<name>".
	JobID     string `json:"jobId"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Kind is the gpuctl kind: training, inference, notebook or compute.
	Kind   string `json:"kind"`
	Pool   string `json:"pool"`
	Status string `json:"status"`
	// GPU counts the GPUs of all the job's pods (parallelism or replicas × GPUs per pod).
	GPU     int64  `json:"gpu"`
	GPUType string `json:"gpuType"`
	// StartedAt is a Job's start time, or the start of the oldest pod of a Deployment or
	// StatefulSet; null before it starts.
	StartedAt *time.Time `json:"startedAt"`
	// Queue is the job's place in Kueue's queue (queueing: kueue); null when Kueue does not
	// queue it.
	Queue *QueueState `json:"queue,omitempty"`
}

// JobDetail is one job in full, the answer of GET /api/v1/jobs/{jobId}.
type JobDetail struct {
	JobID     string `json:"jobId"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	// Version is the gpuctl format version (v0.1).
	Version string `json:"version"`
	// YAMLContent is empty: the file is in Git, at Source.
	YAMLContent string `json:"yamlContent"`
	// Source is the repository path the job was rendered from (annotation g8s.host/source).
	Source      string       `json:"source"`
	Description string       `json:"description,omitempty"`
	Status      string       `json:"status"`
	Pool        string       `json:"pool"`
	Priority    string       `json:"priority"`
	Resources   JobResources `json:"resources"`
	// Metrics are the job's GPU metrics as measured, from Prometheus (--prometheus-url); nil
	// (no "metrics" key) when nothing measured them: no Prometheus, or it failed.
	Metrics      *JobMetrics  `json:"metrics,omitempty"`
	CreatedAt    time.Time    `json:"createdAt"`
	StartedAt    *time.Time   `json:"startedAt"`
	K8sResources K8sResources `json:"k8sResources"`
	// Queue is as JobSummary's.
	Queue *QueueState `json:"queue,omitempty"`
	// Reason says why the job stands where it does, in words: why it failed ("Error: exit
	// code 1", "OOMKilled (64Gi limit)", "Preempted by default/sft (gpuctl-high)",
	// "BackoffLimitExceeded after 3 attempts"), why it was retried ("Evicted: node gpu-a100-0
	// unreachable, retried (attempt 2 of 4)"), where Kueue requeued it ("Preempted by bob.big
	// (reclamation within the cohort), requeued at #2"); "" for a job that runs or ran
	// without a hitch.
	Reason string `json:"reason,omitempty"`
	// Restarts counts the times the JobSet controller restarted a JobSet-mode multi-node
	// training (all its ranks together: the JobSet's status.restarts); 0 for the other jobs.
	Restarts int32 `json:"restarts,omitempty"`
	// Attempts are the pods a training Job ran, oldest first, those gone included (told from
	// the events about them, which outlive them); empty for the other kinds.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// JobResources are the requests of one pod, as the file declares them, and the pod count.
type JobResources struct {
	GPU     int64   `json:"gpu"`
	GPUType string  `json:"gpuType"`
	CPU     float64 `json:"cpu"`
	Memory  string  `json:"memory"`
	// GPUShare is the GPU memory slice in GiB (aliyun.com/gpu-mem), when set.
	GPUShare int64 `json:"gpuShare,omitempty"`
	// Pods is the Job's parallelism or the replicas; GPUTotal is Pods × GPU.
	Pods     int32 `json:"pods"`
	GPUTotal int64 `json:"gpuTotal"`
}

// JobMetrics are a job's live GPU metrics (seed 001 §7.2.1's metrics): only what is measured
// is set, never a zero in place of a value; the seed's networkLatency and throughput are
// measured by nothing, and never given.
type JobMetrics struct {
	// GPUUtilization is its GPUs' utilization in %, averaged (0 is an idle job); nil when no
	// GPU of it has a utilization series.
	GPUUtilization *float64 `json:"gpuUtilization,omitempty"`
	// MemoryUsage is the GPU memory its GPUs use of theirs ("68Gi/80Gi"); "" when unknown.
	MemoryUsage string `json:"memoryUsage,omitempty"`
}

// K8sResources names the Kubernetes objects of a job.
type K8sResources struct {
	// Kind is Job, Deployment, StatefulSet or JobSet; JobName is its name.
	Kind    string   `json:"kind"`
	JobName string   `json:"jobName"`
	Pods    []string `json:"pods"`
}

// JobFilter selects jobs. Its zero value selects every job, on one page.
type JobFilter struct {
	// Kind is a gpuctl kind (render.WorkloadKinds); "" for any.
	Kind string
	// Pool is a pool ("default" for the jobs in no pool); "" for any.
	Pool string
	// Status is a job status in any case, with or without a space, dash or underscore
	// (running, Partially Running, partially-running, ...); "" for any.
	Status string
	// Page is the page of the matching jobs to return.
	Page Page
}

// jobStatuses maps the accepted spellings of a status filter (lower case, without spaces,
// dashes or underscores) to the status.
var jobStatuses = map[string]string{
	"pending": StatusPending, "running": StatusRunning, "partiallyrunning": StatusPartiallyRunning,
	"succeeded": StatusSucceeded, "failed": StatusFailed, "queued": StatusQueued, "preempted": StatusPreempted,
}

// status checks the filter and returns the status it selects ("" for any).
func (f JobFilter) status() (string, error) {
	if err := checkKindPool(f.Kind, f.Pool); err != nil {
		return "", err
	}
	if f.Status == "" {
		return "", nil
	}
	status := jobStatuses[normalizeWord(f.Status)]
	if status == "" {
		return "", filterErrorf("status", "want pending, queued, preempted, running, partially-running, succeeded or failed, got %q", f.Status)
	}
	return status, nil
}

// checkKindPool checks the kind and pool of a job filter.
func checkKindPool(kind, pool string) error {
	if kind != "" && !slices.Contains(render.WorkloadKinds, kind) {
		return filterErrorf("kind", "want one of %s, got %q", strings.Join(render.WorkloadKinds, ", "), kind)
	}
	if len(validation.IsValidLabelValue(pool)) > 0 {
		return filterErrorf("pool", "%q is not a valid pool name", pool)
	}
	return nil
}

// Jobs lists the page of the jobs that the filter selects, by namespace and name. A filter
// value it refuses is a *FilterError.
func (r *Reader) Jobs(ctx context.Context, f JobFilter) (JobList, error) {
	status, err := f.status()
	if err != nil {
		return JobList{}, err
	}
	var all []workload
	var qs *queues
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		all, err = r.listWorkloads(gctx, workloadSelector(f.Kind, f.Pool))
		return err
	})
	g.Go(func() (err error) {
		qs, err = r.loadQueues(gctx, "")
		return err
	})
	if err := g.Wait(); err != nil {
		return JobList{}, err
	}
	var byNS map[string][]*corev1.Pod
	if qs.needPods(all) {
		if byNS, err = r.managedPodsByNS(ctx); err != nil {
			return JobList{}, err
		}
	}
	qs.attach(all, byNS)
	matched := all[:0]
	for _, wl := range all {
		if status == "" || wl.status == status {
			matched = append(matched, wl)
		}
	}
	items := paginate(matched, f.Page)
	if err := r.setStarted(ctx, items, byNS); err != nil {
		return JobList{}, err
	}
	out := JobList{Total: len(matched), Page: f.Page.number(), PageSize: f.Page.Size, Items: []JobSummary{}}
	for _, wl := range items {
		out.Items = append(out.Items, summarize(wl))
	}
	return out, nil
}

func summarize(w workload) JobSummary {
	return JobSummary{JobID: w.id(), Name: w.meta.Name, Namespace: w.meta.Namespace, Kind: w.kind,
		Pool: w.pool(), Status: w.status, GPU: w.gpus(), GPUType: w.gpuType(), StartedAt: timePtr(w.started), Queue: w.queue}
}

func timePtr(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Job reads one job: id is "<namespace>.<name>", or a bare name that exactly one namespace
// has. An unknown job is a *NotFoundError; a bare name of several jobs an *AmbiguousError.
func (r *Reader) Job(ctx context.Context, id string) (JobDetail, error) {
	wl, err := r.findWorkload(ctx, id)
	if err != nil {
		return JobDetail{}, err
	}
	pods, err := r.queuedJobPods(ctx, &wl)
	if err != nil {
		return JobDetail{}, err
	}
	d := detailWithPods(wl, pods)
	if err := r.explain(ctx, &d, wl, pods, nil); err != nil {
		return JobDetail{}, err
	}
	return d, nil
}

// explain sets the detail's attempts and reason: a Job's attempts from its pods and the
// events of its namespace (listed when events is nil).
func (r *Reader) explain(ctx context.Context, d *JobDetail, wl workload, pods []*corev1.Pod, events []*corev1.Event) error {
	var atts []Attempt
	if wl.job != nil {
		h, err := r.loadHistory(ctx, wl.meta.Namespace, events, pods, nil)
		if err != nil {
			return err
		}
		atts = h.attempts(wl, pods)
	}
	if len(atts) == 0 {
		atts = nil // as the API's JSON decodes it (omitempty): one answer, read either way
	}
	d.Attempts, d.Reason = atts, jobReason(wl.view(), atts)
	if wl.object == render.JobSetKind && d.Reason == "" {
		if events == nil && wl.restarts > 0 {
			var err error
			if events, err = r.ObjectSource().Events(ctx, wl.meta.Namespace); err != nil {
				return fmt.Errorf("list events: %w", err)
			}
		}
		d.Reason = jobSetReason(wl, events)
	}
	return nil
}

// queuedJobPods lists the workload's pods and gives it its queue state.
func (r *Reader) queuedJobPods(ctx context.Context, wl *workload) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	var qs *queues
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		pods, err = r.jobPods(gctx, *wl)
		return err
	})
	g.Go(func() (err error) {
		qs, err = r.loadQueues(gctx, wl.meta.Namespace)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	ws := []workload{*wl}
	qs.attach(ws, map[string][]*corev1.Pod{wl.meta.Namespace: pods})
	*wl = ws[0]
	return pods, nil
}

// detailWithPods is the workload's detail with its pods (a Deployment's or StatefulSet's start
// is its earliest pod's).
func detailWithPods(wl workload, pods []*corev1.Pod) JobDetail {
	if wl.started == nil {
		wl.started = earliestStart(pods, wl.selector)
	}
	d := detail(wl)
	for _, p := range pods {
		d.K8sResources.Pods = append(d.K8sResources.Pods, p.Name)
	}
	sort.Strings(d.K8sResources.Pods)
	return d
}

func detail(w workload) JobDetail {
	req := requestsOf(&w.template.Spec)
	return JobDetail{
		JobID: w.id(), Name: w.meta.Name, Namespace: w.meta.Namespace, Kind: w.kind,
		Version: render.Version, Source: w.meta.Annotations[keys.Source],
		Description: w.meta.Annotations[keys.Description], Status: w.status, Pool: w.pool(),
		Priority: w.meta.Labels[keys.Priority],
		Resources: JobResources{GPU: req.gpu, GPUType: w.gpuType(), CPU: cores(req.cpu),
			Memory: req.memory.String(), GPUShare: req.gpuMem, Pods: w.pods, GPUTotal: w.gpus()},
		CreatedAt:    w.meta.CreationTimestamp.UTC(),
		StartedAt:    timePtr(w.started),
		K8sResources: K8sResources{Kind: w.object, JobName: w.meta.Name, Pods: []string{}},
		Queue:        w.queue,
		Restarts:     w.restarts,
	}
}

// findWorkload resolves a jobId: "<namespace>.<name>", or a bare name that exactly one
// namespace has.
func (r *Reader) findWorkload(ctx context.Context, id string) (workload, error) {
	ns, name := splitJobID(id)
	if ns == "" {
		return r.findByName(ctx, name)
	}
	if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return workload{}, &NotFoundError{Kind: "job", Name: id, Hint: " (a jobId is <namespace>.<name>)"}
	}
	objs := r.ObjectSource()
	managed := workloadSelector("", "")
	gets := []func() (workload, error){
		func() (workload, error) {
			j, err := objs.Job(ctx, ns, name)
			return wrapGet(j, err, fromJob)
		},
		func() (workload, error) {
			d, err := objs.Deployment(ctx, ns, name)
			return wrapGet(d, err, fromDeployment)
		},
		func() (workload, error) {
			st, err := objs.StatefulSet(ctx, ns, name)
			return wrapGet(st, err, fromStatefulSet)
		},
	}
	gets = append(gets, func() (workload, error) {
		wl, ok, err := r.jobSet(ctx, ns, name)
		if err == nil && !ok {
			err = apierrors.NewNotFound(jobSets.GroupResource(), name)
		}
		return wl, err
	})
	for _, get := range gets {
		wl, err := get()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return workload{}, fmt.Errorf("job %s: get: %w", id, err)
		}
		if managed.Matches(labels.Set(wl.meta.Labels)) {
			return wl, nil
		}
	}
	return workload{}, noJob(id)
}

// noJob is the error of an unknown job id or name.
func noJob(id string) *NotFoundError { return &NotFoundError{Kind: "job", Name: id} }

func wrapGet[T any](obj *T, err error, conv func(*T) workload) (workload, error) {
	if err != nil {
		return workload{}, err
	}
	return conv(obj), nil
}

// findByName finds the one job of a name in any namespace.
func (r *Reader) findByName(ctx context.Context, name string) (workload, error) {
	all, err := r.listWorkloads(ctx, workloadSelector("", ""))
	if err != nil {
		return workload{}, err
	}
	var found []workload
	for _, wl := range all {
		if wl.meta.Name == name {
			found = append(found, wl)
		}
	}
	switch len(found) {
	case 0:
		return workload{}, noJob(name)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, wl := range found {
		ids[i] = wl.id()
	}
	return workload{}, ambiguous(name, ids)
}
