package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"golang.org/x/sync/errgroup"
)

// The statuses of a job.
const (
	StatusPending          = "Pending"
	StatusRunning          = "Running"
	StatusPartiallyRunning = "Partially Running"
	StatusSucceeded        = "Succeeded"
	StatusFailed           = "Failed"
)

// JobStatus is the status of a training Job. A terminal condition that the Job controller set
// (Complete or SuccessCriteriaMet, Failed or FailureTarget) decides; otherwise succeeded > 0 →
// Succeeded, active > 0 → Running (a Job that retries a failed pod runs again), failed > 0 →
// Failed, else Pending.
func JobStatus(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			return StatusSucceeded
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			return StatusFailed
		}
	}
	switch {
	case j.Status.Succeeded > 0:
		return StatusSucceeded
	case j.Status.Active > 0:
		return StatusRunning
	case j.Status.Failed > 0:
		return StatusFailed
	}
	return StatusPending
}

// DeploymentStatus is the status of an inference or compute Deployment: all desired replicas
// ready → Running, some → Partially Running, none (or none desired) → Pending.
func DeploymentStatus(d *appsv1.Deployment) string {
	return replicaStatus(replicas(d.Spec.Replicas), d.Status.ReadyReplicas)
}

// StatefulSetStatus is the status of a notebook StatefulSet, by the rule of DeploymentStatus.
func StatefulSetStatus(s *appsv1.StatefulSet) string {
	return replicaStatus(replicas(s.Spec.Replicas), s.Status.ReadyReplicas)
}

// replicaStatus compares ready with desired replicas. More ready than desired (a rollout's
// surge) still counts as Running.
func replicaStatus(desired, ready int32) string {
	switch {
	case desired > 0 && ready >= desired:
		return StatusRunning
	case ready > 0:
		return StatusPartiallyRunning
	}
	return StatusPending
}

// replicas is a replica count with the API's default of 1.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// workload is a Job, Deployment, StatefulSet or JobSet that gpuctl rendered, reduced to what the model shows.
type workload struct {
	kind     string // gpuctl kind: the job-type label
	object   string // Job, Deployment or StatefulSet
	meta     metav1.ObjectMeta
	template corev1.PodTemplateSpec
	selector labels.Selector
	pods     int32 // parallelism or replicas
	status   string
	started  *metav1.Time // a Job's startTime; for the others, set from their pods
	note     string       // why it has no pods, when its object says: "suspended", a ReplicaFailure
	suspend  bool         // a suspended Job
	queue    *QueueState  // its place in Kueue's queue; nil without Kueue
	queues   *queues      // Kueue's view it was attached from, for the states of its pods
	job      *batchv1.Job // the Job, for a Job: its status tells its attempts (attempts.go)
	restarts int32        // a JobSet's restarts (status.restarts)
	// multiKueue is a Job or JobSet that Kueue's MultiKueue dispatches to a worker cluster
	// (spec.managedBy): no pod of it runs here, and its status is its worker copy's.
	multiKueue bool
}

func fromJob(j *batchv1.Job) workload {
	w := newWorkload("Job", j.ObjectMeta, j.Spec.Template, j.Spec.Selector, replicas(j.Spec.Parallelism))
	w.status, w.started, w.job = JobStatus(j), j.Status.StartTime, j
	w.multiKueue = j.Spec.ManagedBy != nil && *j.Spec.ManagedBy == keys.MultiKueueManager
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		w.note, w.suspend = "suspended", true
	}
	return w
}

func fromDeployment(d *appsv1.Deployment) workload {
	w := newWorkload("Deployment", d.ObjectMeta, d.Spec.Template, d.Spec.Selector, replicas(d.Spec.Replicas))
	w.status = DeploymentStatus(d)
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			w.note = oneLine(c.Message) // e.g. a quota exceeded
		}
	}
	return w
}

func fromStatefulSet(s *appsv1.StatefulSet) workload {
	w := newWorkload("StatefulSet", s.ObjectMeta, s.Spec.Template, s.Spec.Selector, replicas(s.Spec.Replicas))
	w.status = StatefulSetStatus(s)
	return w
}

// newWorkload selects pods with the object's selector, or with app=<name> when it has none.
func newWorkload(object string, meta metav1.ObjectMeta, t corev1.PodTemplateSpec, sel *metav1.LabelSelector, pods int32) workload {
	selector := labels.SelectorFromSet(labels.Set{keys.App: meta.Name})
	if sel != nil {
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && !s.Empty() {
			selector = s
		}
	}
	return workload{kind: meta.Labels[keys.JobType], object: object, meta: meta, template: t,
		selector: selector, pods: pods}
}

// id is the jobId: "<namespace>.<name>". Namespaces hold no dots, so the first dot splits it.
func (w workload) id() string { return w.meta.Namespace + "." + w.meta.Name }

func (w workload) pool() string {
	if p := w.meta.Labels[keys.Pool]; p != "" {
		return p
	}
	return keys.DefaultPool
}

func (w workload) gpuType() string { return w.template.Spec.NodeSelector[keys.GPUType] }

// gpus is what the workload requests when all its pods run.
func (w workload) gpus() int64 { return int64(w.pods) * requestsOf(&w.template.Spec).gpu }

func (w workload) terminal() bool { return w.status == StatusSucceeded || w.status == StatusFailed }

// splitJobID splits "<namespace>.<name>"; a bare name has no namespace.
func splitJobID(id string) (namespace, name string) {
	if ns, n, ok := strings.Cut(id, "."); ok {
		return ns, n
	}
	return "", id
}

// workloadSelector selects gpuctl's workloads, optionally of one kind and pool. Both values
// must be valid label values (see JobFilter.status).
func workloadSelector(kind, pool string) labels.Selector {
	sel := labels.NewSelector()
	add := func(key string, op selection.Operator, vals ...string) {
		r, err := labels.NewRequirement(key, op, vals)
		if err != nil {
			panic(fmt.Sprintf("cluster: selector %s: %v", key, err)) // values were validated
		}
		sel = sel.Add(*r)
	}
	add(keys.ManagedBy, selection.Equals, keys.ManagedByValue)
	if kind != "" {
		add(keys.JobType, selection.Equals, kind)
	} else {
		add(keys.JobType, selection.Exists)
	}
	if pool != "" {
		add(keys.Pool, selection.Equals, pool)
	}
	return sel
}

// listWorkloads lists the Jobs, Deployments, StatefulSets and JobSets in all namespaces that sel
// selects, ordered by namespace, name and object kind.
func (r *Reader) listWorkloads(ctx context.Context, sel labels.Selector) ([]workload, error) {
	return r.listWorkloadsIn(ctx, metav1.NamespaceAll, sel)
}

// listWorkloadsIn lists them in one namespace ("" for all).
func (r *Reader) listWorkloadsIn(ctx context.Context, namespace string, sel labels.Selector) ([]workload, error) {
	objs := r.ObjectSource()
	// The four LISTs at once: through a kubeconfig each is a round trip to the API server.
	var jobs []*batchv1.Job
	var deps []*appsv1.Deployment
	var sets []*appsv1.StatefulSet
	var jss []*unstructured.Unstructured
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if jss, err = objs.JobSets(gctx, namespace, sel); err != nil {
			err = fmt.Errorf("list jobsets: %w", err)
		}
		return err
	})
	g.Go(func() (err error) {
		if jobs, err = objs.Jobs(gctx, namespace, sel); err != nil {
			err = fmt.Errorf("list jobs: %w", err)
		}
		return err
	})
	g.Go(func() (err error) {
		if deps, err = objs.Deployments(gctx, namespace, sel); err != nil {
			err = fmt.Errorf("list deployments: %w", err)
		}
		return err
	})
	g.Go(func() (err error) {
		if sets, err = objs.StatefulSets(gctx, namespace, sel); err != nil {
			err = fmt.Errorf("list statefulsets: %w", err)
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([]workload, 0, len(jobs)+len(deps)+len(sets)+len(jss))
	for _, u := range jss {
		out = append(out, fromJobSet(u))
	}
	for _, j := range jobs {
		out = append(out, fromJob(j))
	}
	for _, d := range deps {
		out = append(out, fromDeployment(d))
	}
	for _, s := range sets {
		out = append(out, fromStatefulSet(s))
	}
	sortWorkloads(out)
	return out, nil
}

func sortWorkloads(ws []workload) {
	sort.Slice(ws, func(i, j int) bool {
		a, b := ws[i], ws[j]
		if a.meta.Namespace != b.meta.Namespace {
			return a.meta.Namespace < b.meta.Namespace
		}
		if a.meta.Name != b.meta.Name {
			return a.meta.Name < b.meta.Name
		}
		return a.object < b.object
	})
}

// setStarted sets the start of Deployments and StatefulSets to the earliest start of their
// current pods, from gpuctl's pods by namespace (listed in all namespaces when nil).
func (r *Reader) setStarted(ctx context.Context, ws []workload, byNS map[string][]*corev1.Pod) error {
	need := false
	for _, w := range ws {
		need = need || w.started == nil && w.object != "Job"
	}
	if !need {
		return nil
	}
	if byNS == nil {
		var err error
		if byNS, err = r.managedPodsByNS(ctx); err != nil {
			return err
		}
	}
	for i := range ws {
		if ws[i].started == nil && ws[i].object != "Job" {
			ws[i].started = earliestStart(byNS[ws[i].meta.Namespace], ws[i].selector)
		}
	}
	return nil
}

func earliestStart(pods []*corev1.Pod, sel labels.Selector) *metav1.Time {
	var first *metav1.Time
	for _, p := range pods {
		t := p.Status.StartTime
		if t != nil && sel.Matches(labels.Set(p.Labels)) && (first == nil || t.Before(first)) {
			first = t
		}
	}
	return first
}
