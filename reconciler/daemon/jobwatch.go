package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/markdown"
	"github.com/gpuctl/gpuctl/notify"
	"github.com/gpuctl/gpuctl/render"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// The alerts of jobs and quotas (docs/notifications.md, "What the daemon sends"): while it
// leads, and when Options.Alerts is set, the daemon watches gpuctl's Jobs and the teams'
// ResourceQuotas. A Job that gains a Failed condition sends JobFailed (Key job/<ns>/<name>),
// closed when the Job is deleted or recreated; a team whose pods request every GPU of its
// quota sends QuotaReached (Key quota/<ns>), closed by QuotaFreed when they no longer do.
// The informers keep of each object only what these alerts read (trimJob, trimQuota), so
// that 10,000 Jobs cost little memory.

// maxJobMessage bounds a failed Job's condition message in an alert (and in the cache).
const maxJobMessage = 300

// jobPodWait bounds the read of a failed Job's pods, for their termination reason.
const jobPodWait = 5 * time.Second

// watchJobs runs the informers of gpuctl's Jobs and of the teams' ResourceQuotas until ctx
// ends.
func (d *Daemon) watchJobs(ctx context.Context) {
	kube := d.opts.Store.Kube
	trim := informers.WithTransform(trimWatched)
	jobs := informers.NewSharedInformerFactoryWithOptions(kube, 0, trim, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = labels.SelectorFromSet(labels.Set{keys.ManagedBy: keys.ManagedByValue}).String()
	}))
	quotas := informers.NewSharedInformerFactoryWithOptions(kube, 0, trim, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = keys.QuotaSelector.String()
	}))
	w := &jobWatch{d: d, ctx: ctx, reached: map[string]bool{}, queueReached: map[string]bool{}}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{jobs.Batch().V1().Jobs().Informer(), cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: w.jobAdded, UpdateFunc: w.jobUpdated, DeleteFunc: w.jobDeleted}},
		{quotas.Core().V1().ResourceQuotas().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: w.quotaSeen, UpdateFunc: func(_, obj any) { w.quotaSeen(obj) }, DeleteFunc: w.quotaDeleted}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			d.opts.Log.Error("job and quota alerts: cannot watch", "err", err)
			return
		}
	}
	kueue := d.kueueInformers(ctx, w) // JobSets and ClusterQueues (jobwatch_kueue.go)
	jobs.Start(ctx.Done())
	quotas.Start(ctx.Done())
	var running sync.WaitGroup
	for _, inf := range kueue {
		running.Go(func() { inf.Run(ctx.Done()) })
	}
	<-ctx.Done()
	running.Wait()
	jobs.Shutdown()
	quotas.Shutdown()
}

// jobWatch turns what the informers see into alerts. Each informer calls its handlers one at
// a time; reached is the ResourceQuota handler's only, queueReached the ClusterQueue
// handler's.
type jobWatch struct {
	d            *Daemon
	ctx          context.Context
	reached      map[string]bool // namespaces whose QuotaReached of a ResourceQuota is open
	queueReached map[string]bool // namespaces whose QuotaReached of a ClusterQueue is open
}

// trimWatched is the informers' transform: trimJob or trimQuota; tombstones pass unchanged.
func trimWatched(obj any) (any, error) {
	switch o := obj.(type) {
	case *batchv1.Job:
		return trimJob(o), nil
	case *corev1.ResourceQuota:
		return trimQuota(o), nil
	}
	return obj, nil
}

// watchedJob is what the informer keeps of a Job (or a JobSet): its name, namespace, uid and
// resourceVersion (an update that keeps it is a resync, which no handler hears), its source
// file, whether it is a MultiKueue copy, and its Failed=True condition if any. A typed Job,
// even emptied, takes 1.3 kB.
type watchedJob struct {
	name, namespace, resourceVersion, source string
	uid                                      types.UID
	// multiKueueLabels is set on a job with MultiKueue's labels (keys.MultiKueueCopy): in a
	// worker cluster, the copy of a manager's job, whose failure is the manager's to tell,
	// from the status MultiKueue copies onto its Job (jobWatch.copied).
	multiKueueLabels bool
	// jobSet is set on a JobSet's (multiNode: jobset; trimJobSet).
	jobSet bool
	// dispatched is set on a manager cluster's Job that MultiKueue runs in a worker
	// (spec.managedBy kueue.x-k8s.io/multikueue): no pod of it is here.
	dispatched bool
	// failed is set by a Failed=True condition, with its reason and its message on one line,
	// at most maxJobMessage characters.
	failed                      bool
	failedReason, failedMessage string
}

// GetObjectMeta makes a watchedJob an object the informer keys (meta.Accessor).
func (j *watchedJob) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: j.name, Namespace: j.namespace, UID: j.uid, ResourceVersion: j.resourceVersion}
}

// trimJob keeps of a Job what its alerts read (watchedJob). Its spec, the rest of its status,
// its labels and managedFields are most of a Job's size.
func trimJob(j *batchv1.Job) *watchedJob {
	out := &watchedJob{name: j.Name, namespace: j.Namespace, uid: j.UID, resourceVersion: j.ResourceVersion, source: j.Annotations[keys.Source],
		multiKueueLabels: keys.MultiKueueCopy(batchv1.GroupName, "Job", j.Labels), dispatched: j.Spec.ManagedBy != nil && *j.Spec.ManagedBy == keys.MultiKueueManager}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			out.failed, out.failedReason, out.failedMessage = true, c.Reason, jobMessage(c.Message)
		}
	}
	return out
}

// trimQuota keeps of a ResourceQuota its name, namespace, resourceVersion and the GPUs of its
// status.
func trimQuota(q *corev1.ResourceQuota) *corev1.ResourceQuota {
	out := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: q.Name, Namespace: q.Namespace, UID: q.UID, ResourceVersion: q.ResourceVersion}}
	if v, ok := q.Status.Hard[keys.QuotaRequestsGPU]; ok {
		out.Status.Hard = corev1.ResourceList{keys.QuotaRequestsGPU: v}
	}
	if v, ok := q.Status.Used[keys.QuotaRequestsGPU]; ok {
		out.Status.Used = corev1.ResourceList{keys.QuotaRequestsGPU: v}
	}
	return out
}

// jobMessage is a Job condition's message on one line (markdown.Words), cut to
// maxJobMessage characters with "…"; a copy, so that the cache keeps no reference to the
// whole.
func jobMessage(s string) string {
	s = markdown.Words(s)
	if utf8.RuneCountInString(s) > maxJobMessage {
		s = string([]rune(s)[:maxJobMessage-1]) + "…"
	}
	return strings.Clone(s)
}

// copied reports whether j is MultiKueue's copy of a manager's job: it has MultiKueue's
// labels, and the daemon's last render was a MultiKueue worker's. Elsewhere the labels are a
// claim that anyone with kubectl can make, and do not silence a failure.
func (w *jobWatch) copied(j *watchedJob) bool {
	return j.multiKueueLabels && w.d.multiKueueWorker.Load()
}

// jobKey is the Key of a Job's JobFailed condition.
func jobKey(namespace, name string) string { return "job/" + namespace + "/" + name }

// jobAdded alerts on a Job that is Failed when it appears, unless it was in the informer's
// first list: a Job that failed before the daemon led is not told (only failures seen live).
func (w *jobWatch) jobAdded(obj any, initial bool) {
	if j, ok := obj.(*watchedJob); ok && !initial {
		w.jobFailed(j)
	}
}

// jobUpdated alerts on a Job that gains a Failed condition; a Job recreated under its name (a
// new uid) closes the old one's condition first.
func (w *jobWatch) jobUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*watchedJob)
	j, ok2 := newObj.(*watchedJob)
	switch {
	case !ok1 || !ok2:
	case old.uid != j.uid:
		if old.failed && !w.copied(old) {
			w.jobGone(old, "was recreated")
		}
		w.jobFailed(j)
	case !old.failed:
		w.jobFailed(j)
	}
}

// jobDeleted closes the condition of a failed Job that is deleted.
func (w *jobWatch) jobDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if j, ok := obj.(*watchedJob); ok && j.failed && !w.copied(j) {
		w.jobGone(j, "was deleted")
	}
}

// jobFailed sends JobFailed when j is Failed: "sft failed: BackoffLimitExceeded: Job has
// reached the specified backoff limit (pod sft-x2v9k: OOMKilled, exit code 137)", or "(ran on
// cluster gpu-b)" for a Job that MultiKueue ran in a worker, its source file as Details. A MultiKueue copy sends nothing: in a fleet, the manager's daemon tells of
// the job, once, when MultiKueue copies the failure onto the manager's Job.
func (w *jobWatch) jobFailed(j *watchedJob) {
	if !j.failed || w.copied(j) {
		return
	}
	msg := j.name + " failed: " + j.failedReason
	if j.failedMessage != "" {
		msg += ": " + j.failedMessage
	}
	if j.dispatched {
		if worker := w.workerOf(j); worker != "" {
			msg += " (ran on cluster " + worker + ")"
		}
	} else if pod := w.podFailure(j); pod != "" {
		msg += " (" + pod + ")"
	}
	var details []string
	if j.source != "" {
		details = []string{j.source}
	}
	w.d.opts.Alerts.Send(notify.Event{Reason: notify.JobFailed, Severity: notify.SeverityError, Namespace: j.namespace,
		Object: j.kind() + " " + j.namespace + "/" + j.name, Key: jobKey(j.namespace, j.name), Message: msg, Details: details})
}

// jobGone closes a failed Job's condition.
func (w *jobWatch) jobGone(j *watchedJob, what string) {
	w.d.opts.Alerts.Send(notify.Event{Reason: notify.JobFailed, Severity: notify.SeverityInfo, Namespace: j.namespace,
		Object: j.kind() + " " + j.namespace + "/" + j.name, Key: jobKey(j.namespace, j.name), Resolved: true,
		Message: "the failed job " + j.namespace + "/" + j.name + " " + what})
}

// podFailure is how the last failed pod of a Job (or JobSet) ended, "pod sft-x2v9k: OOMKilled,
// exit code 137"; "" when none is found (one LIST, by the Job's uid or the JobSet's name, made
// only for a failure).
func (w *jobWatch) podFailure(j *watchedJob) string {
	ctx, cancel := context.WithTimeout(w.ctx, jobPodWait)
	defer cancel()
	list, err := w.d.opts.Store.Kube.CoreV1().Pods(j.namespace).List(ctx, metav1.ListOptions{LabelSelector: j.podSelector()})
	if err != nil {
		return ""
	}
	var best string
	var at time.Time
	for _, p := range list.Items {
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 || (best != "" && !t.FinishedAt.After(at)) {
				continue
			}
			best, at = fmt.Sprintf("pod %s: %s, exit code %d", p.Name, t.Reason, t.ExitCode), t.FinishedAt.Time
		}
	}
	return best
}

// quotaKey is the Key of a team's QuotaReached condition.
func quotaKey(namespace string) string { return "quota/" + namespace }

// quotaSeen sends QuotaReached when the pods of a team request every GPU of its quota, and
// QuotaFreed when they no longer do. A quota reached when the daemon starts leading is told.
func (w *jobWatch) quotaSeen(obj any) {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return
	}
	hard, used := q.Status.Hard[keys.QuotaRequestsGPU], q.Status.Used[keys.QuotaRequestsGPU]
	full := hard.Sign() > 0 && used.Cmp(hard) >= 0
	ns := q.Namespace
	switch {
	case full && !w.reached[ns]:
		w.reached[ns] = true
		msg := fmt.Sprintf("team %s requests all %s of its %s GPUs: new jobs wait", ns, used.String(), hard.String())
		if used.Cmp(hard) > 0 {
			msg = fmt.Sprintf("team %s requests %s GPUs, over its quota of %s: new jobs wait", ns, used.String(), hard.String())
		}
		w.d.opts.Alerts.Send(notify.Event{Reason: notify.QuotaReached, Severity: notify.SeverityWarning, Namespace: ns,
			Object: "ResourceQuota " + ns + "/" + q.Name, Key: quotaKey(ns), Message: msg})
	case !full && w.reached[ns]:
		delete(w.reached, ns)
		w.freed(ns, "ResourceQuota "+ns+"/"+q.Name, fmt.Sprintf("team %s requests %s of its %s GPUs", ns, used.String(), hard.String()))
	}
}

// quotaDeleted closes the condition of a reached quota that is deleted.
func (w *jobWatch) quotaDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if q, ok := obj.(*corev1.ResourceQuota); ok && w.reached[q.Namespace] {
		delete(w.reached, q.Namespace)
		w.freed(q.Namespace, "ResourceQuota "+q.Namespace+"/"+q.Name, "the GPU quota of team "+q.Namespace+" was deleted")
	}
}

// freed closes a team's QuotaReached, of its ResourceQuota or ClusterQueue object.
func (w *jobWatch) freed(ns, object, msg string) {
	w.d.opts.Alerts.Send(notify.Event{Reason: notify.QuotaFreed, Severity: notify.SeverityInfo, Namespace: ns,
		Object: object, Key: quotaKey(ns), Resolved: true, Message: msg})
}

// podSelector selects the pods of a watched Job (by its uid) or JobSet (by its name), for
// podFailure.
func (j *watchedJob) podSelector() string {
	if j.jobSet {
		return labels.SelectorFromSet(labels.Set{jobSetNameLabel: j.name}).String()
	}
	return labels.SelectorFromSet(labels.Set{batchv1.ControllerUidLabel: string(j.uid)}).String()
}

// kind is the watched object's kind, for an alert's Object.
func (j *watchedJob) kind() string {
	if j.jobSet {
		return render.JobSetKind
	}
	return "Job"
}
