package cluster

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The queue states of a job under Kueue (QueueState.State).
const (
	// QueueQueued waits in its ClusterQueue for quota.
	QueueQueued = "Queued"
	// QueueReserved has reserved quota and waits for Kueue's admission checks.
	QueueReserved = "Reserved"
	// QueueAdmitted is admitted: its pods may run.
	QueueAdmitted = "Admitted"
	// QueuePreempted was evicted to make room for another workload; it is queued again.
	QueuePreempted = "Preempted"
	// QueueEvicted was evicted for another reason (QueueState.Reason); it is queued again
	// unless it was deactivated.
	QueueEvicted = "Evicted"
	// QueueFinished has finished (succeeded or failed).
	QueueFinished = "Finished"
)

// Kueue's Workload conditions and reasons that the read model reads.
const (
	condQuotaReserved   = "QuotaReserved"
	condAdmitted        = "Admitted"
	condEvicted         = "Evicted"
	condPreempted       = "Preempted"
	condFinished        = "Finished"
	reasonPreempted     = "Preempted"
	reasonPodsReadyWait = "PodsReadyTimeout"
	reasonAdmissionChk  = "AdmissionCheck"
)

// preemptionReasons are Kueue's reasons of the Preempted condition, in words.
var preemptionReasons = map[string]string{
	"InClusterQueue":                "prioritization in the team's queue",
	"InCohortReclamation":           "reclamation within the cohort",
	"InCohortFairSharing":           "fair sharing within the cohort",
	"InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}

// QueueState is where a job stands in Kueue's queue (queueing: kueue): the state of its
// Workload, its place in its team's ClusterQueue while it waits, and what it waits for.
type QueueState struct {
	// Workload is the name of Kueue's Workload object (in the job's namespace).
	Workload string `json:"workload"`
	// LocalQueue is the Workload's queue (spec.queueName); ClusterQueue the team's queue it
	// feeds, whose name is the team's namespace.
	LocalQueue   string `json:"localQueue"`
	ClusterQueue string `json:"clusterQueue"`
	// State is Queued, Reserved, Admitted, Preempted, Evicted or Finished.
	State string `json:"state"`
	// Position is the place (from 1) among the Workloads that wait in the ClusterQueue, in
	// Kueue's order (higher priority first, then the older); Pending counts them. Both are 0
	// when the job does not wait.
	Position int `json:"position,omitempty"`
	Pending  int `json:"pending,omitempty"`
	// Priority is the Workload's priority (spec.priority); PriorityClass its
	// WorkloadPriorityClass.
	Priority      int32  `json:"priority"`
	PriorityClass string `json:"priorityClass,omitempty"`
	// WaitsFor is the quota that a waiting job needs and how much of it its team and the
	// cohort have; nil when it does not wait.
	WaitsFor *QueueWait `json:"waitsFor,omitempty"`
	// Flavors are the ResourceFlavors (pools) that an admitted job was given.
	Flavors []string `json:"flavors,omitempty"`
	// PreemptedBy names what preempted the job, when State is Preempted.
	PreemptedBy *Preemptor `json:"preemptedBy,omitempty"`
	// Reason says why in words: a preemption's or eviction's reason.
	Reason string `json:"reason,omitempty"`
	// Message is Kueue's message about a waiting job (its QuotaReserved condition), e.g.
	// "couldn't assign flavors to pod set main: insufficient unused quota ...".
	Message string `json:"message,omitempty"`
	// Cluster is the worker cluster that runs a job that Kueue's MultiKueue dispatched from
	// this cluster, its manager (the Workload's status.clusterName: the name of the manager's
	// MultiKueueCluster): its pods, events and logs are there, none here. "" otherwise.
	Cluster string `json:"cluster,omitempty"`
	// Nominated are the worker clusters to which MultiKueue sent the job while none has
	// admitted it yet (status.nominatedClusterNames); empty once Cluster is set.
	Nominated []string `json:"nominatedClusters,omitempty"`
	// Origin is set on a worker cluster's copy of a job that MultiKueue dispatched from a
	// manager cluster: the manager's MultiKueue origin, the copy's label
	// kueue.x-k8s.io/multikueue-origin. "" for a job committed to this cluster.
	Origin string `json:"origin,omitempty"`
	// QueuedAt orders the job in its queue: the Workload's creation, or its last eviction for
	// a timeout or an admission check. AdmittedAt, EvictedAt and FinishedAt are the times of
	// those conditions.
	QueuedAt   time.Time  `json:"queuedAt"`
	AdmittedAt *time.Time `json:"admittedAt,omitempty"`
	EvictedAt  *time.Time `json:"evictedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// QueueWait is what a waiting job needs of one resource in one flavor, against its team's
// quota and what the rest of the cohort could lend. Quantities are Kubernetes quantities.
type QueueWait struct {
	// Resource is nvidia.com/gpu, cpu or memory: the first the job needs more of than its
	// team has free, else the GPUs (the CPU when it asks for none).
	Resource string `json:"resource"`
	// Need is the amount the whole job asks for (all its pods); Display names the unit:
	// the GPU type for GPUs ("a100-80g", or nvidia.com/gpu), else the resource.
	Need    string `json:"need"`
	Display string `json:"display"`
	// Flavor is the ResourceFlavor (the pool) the job asks for.
	Flavor string `json:"flavor"`
	// Used is what the team's ClusterQueue has reserved of the resource in the flavor
	// (borrowed quota included), Nominal its quota there.
	Used    string `json:"used"`
	Nominal string `json:"nominal"`
	// Cohort is the ClusterQueue's cohort; CohortLending what the other teams' ClusterQueues
	// of the cohort could lend of it: their unused nominal quota (capped by their lending
	// limits) less what is borrowed in the cohort already. An aggregate, so a team sees it.
	// Used, Nominal and CohortLending are "" when the ClusterQueue cannot be read.
	Cohort        string `json:"cohort,omitempty"`
	CohortLending string `json:"cohortLending"`
}

// Preemptor names the workload that preempted a job.
type Preemptor struct {
	// JobID is the preemptor's job id ("<namespace>.<name>" of the Job or StatefulSet that
	// owns its Workload) when known; Namespace its namespace. Both are "" when it is not
	// known or not visible (another team's job, for a team's token).
	JobID     string `json:"jobId,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// UID is the preemptor Workload's UID as Kueue's message gives it.
	UID string `json:"uid,omitempty"`
	// Reason is Kueue's reason in words, e.g. "reclamation within the cohort".
	Reason string `json:"reason"`
}

// Waiting reports whether the job waits in its queue for quota (Queued, or Preempted or
// Evicted and not re-admitted yet).
func (q *QueueState) Waiting() bool { return q != nil && q.Position > 0 }

// Worker is the worker cluster that runs the job (Cluster), "" for a job that MultiKueue did
// not dispatch or for a nil state.
func (q *QueueState) Worker() string {
	if q == nil {
		return ""
	}
	return q.Cluster
}

// Dispatch says where MultiKueue dispatched the job, in words: "runs on cluster gpu-b
// (MultiKueue)", "sent to gpu-a, gpu-b by MultiKueue, admitted by none yet"; "" for a
// job that MultiKueue did not dispatch from here.
func (q *QueueState) Dispatch() string {
	switch {
	case q == nil:
		return ""
	case q.Cluster != "":
		return "runs on cluster " + q.Cluster + " (MultiKueue)"
	case len(q.Nominated) > 0:
		return "sent to " + strings.Join(q.Nominated, ", ") + " by MultiKueue, admitted by none yet"
	}
	return ""
}

// Summary is the state in one line, as get jobs shows it in its REASON column: "#3 in alice:
// waits for 4 × a100-80g in training-pool, team alice at 8/8, cohort lending 0", "preempted
// by bob.big (reclamation within the cohort); #1 in alice: ...", "admitted to
// training-pool in alice". "" for a finished job.
func (q *QueueState) Summary() string {
	if q == nil {
		return ""
	}
	var parts []string
	switch q.State {
	case QueuePreempted:
		parts = append(parts, "preempted "+q.PreemptedBy.String())
	case QueueEvicted:
		parts = append(parts, "evicted: "+q.Reason)
	case QueueAdmitted, QueueReserved:
		word := "admitted to "
		if q.State == QueueReserved {
			word = "quota reserved in "
		}
		s := word + orDash(strings.Join(q.Flavors, ",")) + " in " + q.ClusterQueue
		if d := q.Dispatch(); d != "" {
			s += "; " + d
		}
		return s
	case QueueFinished:
		return ""
	}
	if q.Position > 0 {
		place := fmt.Sprintf("#%d in %s", q.Position, q.ClusterQueue)
		if w := q.WaitText(); w != "" {
			place += ": waits for " + w
		}
		parts = append(parts, place)
	}
	return strings.Join(parts, "; ")
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WaitText is what a waiting job waits for: "4 × a100-80g in training-pool, team alice at
// 8/8, cohort lending 0"; "" when it does not wait.
func (q *QueueState) WaitText() string {
	if q == nil || q.WaitsFor == nil {
		return ""
	}
	w := q.WaitsFor
	need := w.Need + " × " + w.Display
	if w.Resource != keys.ResourceGPU {
		need = w.Need + " " + w.Display
	}
	team := ""
	if w.Nominal != "" {
		team = ", team " + q.ClusterQueue + " at " + w.Used + "/" + w.Nominal
	}
	if w.CohortLending != "" {
		team += ", cohort lending " + w.CohortLending
	}
	return need + " in " + w.Flavor + team
}

// String is "by bob.big (reclamation within the cohort)", "by another team's job (...)".
func (p *Preemptor) String() string {
	if p == nil {
		return "by another job"
	}
	by := "by " + p.JobID
	switch {
	case p.JobID == "" && p.Namespace != "":
		by = "by a workload in " + p.Namespace
	case p.JobID == "" && strings.Contains(p.Reason, "cohort"):
		by = "by another team's job"
	case p.JobID == "":
		by = "by another job"
	}
	if p.Reason != "" {
		by += " (" + p.Reason + ")"
	}
	return by
}

// kueueWorkload is the part of a Kueue Workload (kueue.x-k8s.io/v1beta2) the model reads.
type kueueWorkload struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		QueueName        string `json:"queueName"`
		Priority         *int32 `json:"priority"`
		Active           *bool  `json:"active"`
		PriorityClassRef *struct {
			Name string `json:"name"`
		} `json:"priorityClassRef"`
		PodSets []struct {
			Name     string                 `json:"name"`
			Count    int32                  `json:"count"`
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"podSets"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
		// ClusterName and NominatedClusterNames are MultiKueue's, in a manager cluster.
		ClusterName           *string  `json:"clusterName"`
		NominatedClusterNames []string `json:"nominatedClusterNames"`
		Admission             *struct {
			ClusterQueue      string `json:"clusterQueue"`
			PodSetAssignments []struct {
				Flavors       map[string]string   `json:"flavors"`
				ResourceUsage corev1.ResourceList `json:"resourceUsage"`
			} `json:"podSetAssignments"`
		} `json:"admission"`
	} `json:"status"`
}

// fromUnstructured decodes an unstructured object into one of the structs above.
func fromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return out, nil
}

func (w *kueueWorkload) cond(t string) *metav1.Condition {
	return meta.FindStatusCondition(w.Status.Conditions, t)
}

func (w *kueueWorkload) is(t string) bool { return meta.IsStatusConditionTrue(w.Status.Conditions, t) }

func (w *kueueWorkload) priority() int32 {
	if w.Spec.Priority == nil {
		return 0
	}
	return *w.Spec.Priority
}

// waiting reports whether the Workload waits in its queue for quota: queue-managed, active,
// without quota and not finished.
func (w *kueueWorkload) waiting() bool {
	return w.Spec.QueueName != "" && (w.Spec.Active == nil || *w.Spec.Active) &&
		!w.is(condQuotaReserved) && !w.is(condFinished)
}

// orderTime is Kueue's queue order timestamp (workload.Ordering.GetQueueOrderTimestamp with
// its defaults): the last eviction for a PodsReady timeout or an admission check, else the
// creation. (A preempted Workload keeps its creation time: Kueue's PrioritySortingWithinCohort.)
func (w *kueueWorkload) orderTime() time.Time {
	if c := w.cond(condEvicted); c != nil && c.Status == metav1.ConditionTrue &&
		(c.Reason == reasonPodsReadyWait || c.Reason == reasonAdmissionChk) {
		return c.LastTransitionTime.Time
	}
	return w.Metadata.CreationTimestamp.Time
}

// clusterQueue is the ClusterQueue of the Workload: its admission's, else the team's, whose
// name is the namespace (gpuctl's LocalQueue feeds the ClusterQueue of its namespace).
func (w *kueueWorkload) clusterQueue() string {
	if a := w.Status.Admission; a != nil && a.ClusterQueue != "" {
		return a.ClusterQueue
	}
	return w.Metadata.Namespace
}

// needs is what all the Workload's pods request.
func (w *kueueWorkload) needs() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, ps := range w.Spec.PodSets {
		for name, q := range object.PodRequests(&ps.Template.Spec) {
			q.Mul(int64(ps.Count))
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// queueOrder sorts the waiting Workloads of one ClusterQueue as Kueue's BestEffortFIFO heap
// does: higher priority first, then the older order time; the name breaks ties.
func queueOrder(ws []*kueueWorkload) {
	slices.SortStableFunc(ws, func(a, b *kueueWorkload) int {
		if pa, pb := a.priority(), b.priority(); pa != pb {
			if pa > pb {
				return -1
			}
			return 1
		}
		if c := a.orderTime().Compare(b.orderTime()); c != 0 {
			return c
		}
		return strings.Compare(a.Metadata.Name, b.Metadata.Name)
	})
}

// preemptionUID finds the preemptor's Workload UID in Kueue's eviction message: "Preempted to
// accommodate a workload (UID: <uid>, JobUID: <uid>) due to ...".
var preemptionUID = regexp.MustCompile(`\(UID: ([^,)\s]+)`)

// queues is Kueue's view of the cluster as the read model shows it: the Workloads by owner,
// the ClusterQueues by name, the positions of the waiting Workloads.
type queues struct {
	byOwner  map[types.UID]*kueueWorkload
	byUID    map[types.UID]*kueueWorkload
	cqs      map[string]*kueueClusterQueue
	position map[types.UID]int
	pending  map[string]int // waiting Workloads by ClusterQueue
	// usage is what the Workloads that hold quota (and have not finished) reserve, by
	// ClusterQueue, flavor and resource: current where the ClusterQueue's status lags.
	usage map[string]map[string]corev1.ResourceList
}

// newQueues indexes Workloads and ClusterQueues (unstructured, as listed); an object that
// does not decode is left out.
func newQueues(workloads, clusterQueues []*unstructured.Unstructured) *queues {
	q := &queues{byOwner: map[types.UID]*kueueWorkload{}, byUID: map[types.UID]*kueueWorkload{},
		cqs: map[string]*kueueClusterQueue{}, position: map[types.UID]int{}, pending: map[string]int{},
		usage: map[string]map[string]corev1.ResourceList{}}
	waiting := map[string][]*kueueWorkload{}
	for _, u := range workloads {
		w, err := fromUnstructured[kueueWorkload](u)
		if err != nil {
			continue
		}
		q.byUID[w.Metadata.UID] = w
		for _, o := range w.Metadata.OwnerReferences {
			q.byOwner[o.UID] = w
		}
		if w.waiting() {
			cq := w.clusterQueue()
			waiting[cq] = append(waiting[cq], w)
		}
		q.addUsage(w)
	}
	for cq, ws := range waiting {
		queueOrder(ws)
		for i, w := range ws {
			q.position[w.Metadata.UID] = i + 1
		}
		q.pending[cq] = len(ws)
	}
	for _, u := range clusterQueues {
		if c, err := fromUnstructured[kueueClusterQueue](u); err == nil {
			q.cqs[c.Metadata.Name] = c
		}
	}
	return q
}

// addUsage counts what a Workload that holds quota reserves in each flavor of its
// ClusterQueue.
func (q *queues) addUsage(w *kueueWorkload) {
	a := w.Status.Admission
	if a == nil || !w.is("QuotaReserved") || w.is("Finished") {
		return
	}
	byFlavor := q.usage[a.ClusterQueue]
	if byFlavor == nil {
		byFlavor = map[string]corev1.ResourceList{}
		q.usage[a.ClusterQueue] = byFlavor
	}
	for _, ps := range a.PodSetAssignments {
		for res, qty := range ps.ResourceUsage {
			flavor := ps.Flavors[string(res)]
			if byFlavor[flavor] == nil {
				byFlavor[flavor] = corev1.ResourceList{}
			}
			sum := byFlavor[flavor][res]
			sum.Add(qty)
			byFlavor[flavor][res] = sum
		}
	}
}

// of is the queue state of the Workload owned by the object of uid (a Job, StatefulSet or
// Pod), or nil when it has none. wl is the gpuctl workload it belongs to (its pool and GPU
// type name what a waiting job waits for; its labels, whether it is MultiKueue's copy).
func (q *queues) of(uid types.UID, wl *workload) *QueueState {
	if q == nil {
		return nil
	}
	w := q.byOwner[uid]
	if w == nil {
		return nil
	}
	s := &QueueState{Workload: w.Metadata.Name, LocalQueue: w.Spec.QueueName, ClusterQueue: w.clusterQueue(),
		Priority: w.priority(), QueuedAt: w.orderTime().UTC()}
	if r := w.Spec.PriorityClassRef; r != nil {
		s.PriorityClass = r.Name
	}
	if c := w.Status.ClusterName; c != nil {
		s.Cluster = *c
	}
	s.Nominated = slices.Clone(w.Status.NominatedClusterNames)
	if wl != nil {
		s.Origin = wl.meta.Labels[keys.MultiKueueOrigin]
	}
	s.AdmittedAt = condTime(w.cond(condAdmitted))
	s.EvictedAt = condTime(w.cond(condEvicted))
	s.FinishedAt = condTime(w.cond(condFinished))
	evicted := w.cond(condEvicted)
	switch {
	case w.is(condFinished):
		s.State = QueueFinished
	case evicted != nil && evicted.Status == metav1.ConditionTrue && evicted.Reason == reasonPreempted:
		s.State, s.PreemptedBy = QueuePreempted, q.preemptor(w)
		s.Reason = s.PreemptedBy.Reason
	case evicted != nil && evicted.Status == metav1.ConditionTrue:
		s.State, s.Reason = QueueEvicted, evicted.Reason
	case w.is(condQuotaReserved) && w.is(condAdmitted):
		s.State = QueueAdmitted
	case w.is(condQuotaReserved):
		s.State = QueueReserved
	default:
		s.State = QueueQueued
	}
	if s.State == QueueAdmitted || s.State == QueueReserved {
		s.Flavors = admittedFlavors(w)
	}
	if p := q.position[w.Metadata.UID]; p > 0 {
		s.Position, s.Pending = p, q.pending[s.ClusterQueue]
		s.WaitsFor = q.waitsFor(w, wl, s.ClusterQueue)
		if c := w.cond(condQuotaReserved); c != nil && c.Status == metav1.ConditionFalse {
			s.Message = oneLine(c.Message)
		}
	}
	return s
}

// condTime is when a condition became true, or nil when it is not.
func condTime(c *metav1.Condition) *time.Time {
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	t := c.LastTransitionTime.UTC()
	return &t
}

// admittedFlavors are the distinct flavors of the Workload's admission, in order.
func admittedFlavors(w *kueueWorkload) []string {
	var out []string
	if w.Status.Admission == nil {
		return nil
	}
	for _, a := range w.Status.Admission.PodSetAssignments {
		names := make([]string, 0, len(a.Flavors))
		for _, f := range a.Flavors {
			names = append(names, f)
		}
		slices.Sort(names)
		for _, f := range names {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// missesPreemptor reports whether a preempted Workload names a preemptor not among the
// Workloads.
func (q *queues) missesPreemptor() bool {
	for _, w := range q.byUID {
		if c := w.cond(condEvicted); c != nil && c.Status == metav1.ConditionTrue && c.Reason == reasonPreempted {
			if m := preemptionUID.FindStringSubmatch(preemptionMessage(w)); m != nil && q.byUID[types.UID(m[1])] == nil {
				return true
			}
		}
	}
	return false
}

// preemptionMessage is Kueue's message of a preemption: its Preempted condition's, else its
// Evicted condition's.
func preemptionMessage(w *kueueWorkload) string {
	if c := w.cond(condPreempted); c != nil && c.Status == metav1.ConditionTrue && c.Message != "" {
		return c.Message
	}
	if c := w.cond(condEvicted); c != nil {
		return c.Message
	}
	return ""
}

// preemptor names what preempted w, from Kueue's Preempted condition and eviction message.
func (q *queues) preemptor(w *kueueWorkload) *Preemptor {
	p := &Preemptor{}
	if c := w.cond(condPreempted); c != nil && c.Status == metav1.ConditionTrue {
		p.Reason = preemptionReasons[c.Reason]
		if p.Reason == "" {
			p.Reason = c.Reason
		}
	}
	m := preemptionUID.FindStringSubmatch(preemptionMessage(w))
	if m == nil {
		return p
	}
	p.UID = m[1]
	by := q.byUID[types.UID(m[1])]
	if by == nil {
		return p
	}
	p.Namespace = by.Metadata.Namespace
	for _, o := range by.Metadata.OwnerReferences {
		if o.Kind == "Job" || o.Kind == "StatefulSet" || o.Kind == "Deployment" {
			p.JobID = by.Metadata.Namespace + "." + o.Name
		}
	}
	return p
}

// waitResources are the resources a waiting job is said to wait for, in this order.
var waitResources = []corev1.ResourceName{keys.ResourceGPU, corev1.ResourceCPU, corev1.ResourceMemory}

// waitsFor says what a waiting Workload needs: the first resource of waitResources that does
// not fit in its team's free quota and the cohort's lending, else the GPUs (or the CPU).
func (q *queues) waitsFor(w *kueueWorkload, wl *workload, cqName string) *QueueWait {
	flavor := keys.DefaultPool
	if wl != nil {
		flavor = wl.pool()
	}
	needs := w.needs()
	var first *QueueWait
	for _, res := range waitResources {
		need, ok := needs[res]
		if !ok || need.IsZero() {
			continue
		}
		wait, free := q.quotaOf(cqName, flavor, res)
		wait.Need = need.String()
		wait.Display = string(res)
		if res == keys.ResourceGPU && wl != nil && wl.gpuType() != "" {
			wait.Display = wl.gpuType()
		}
		if free != nil && need.Cmp(*free) > 0 {
			return wait
		}
		if first == nil {
			first = wait
		}
	}
	return first
}

// quotaOf is the team's use and quota of a resource in a flavor, the cohort's lending, and
// what is free to the team (nil when its ClusterQueue is not known).
func (q *queues) quotaOf(cqName, flavor string, res corev1.ResourceName) (*QueueWait, *resource.Quantity) {
	wait := &QueueWait{Resource: string(res), Flavor: flavor}
	cq := q.cqs[cqName]
	if cq == nil {
		return wait, nil
	}
	nominal, _ := cq.nominal(flavor, res)
	// The team's own use comes from its Workloads (all of them are in the job's namespace,
	// which alone feeds the team's ClusterQueue): the ClusterQueue's status lags by seconds.
	used := q.usage[cqName][flavor][res]
	borrowed := used.DeepCopy()
	borrowed.Sub(nominal)
	if borrowed.Sign() < 0 {
		borrowed = resource.Quantity{}
	}
	wait.Nominal, wait.Used, wait.Cohort = nominal.String(), used.String(), cq.Spec.CohortName
	lending := q.lending(cq, flavor, res)
	lending.Sub(borrowed)
	if lending.Sign() < 0 {
		lending = resource.Quantity{}
	}
	wait.CohortLending = lending.String()
	free := nominal.DeepCopy()
	free.Sub(used)
	if free.Sign() < 0 {
		free = resource.Quantity{}
	}
	free.Add(lending)
	return wait, &free
}

// lending is what the other ClusterQueues of cq's cohort could lend of a resource in a flavor:
// the sum of their unused nominal quota, each capped by its lending limit, less what they
// have borrowed themselves.
func (q *queues) lending(cq *kueueClusterQueue, flavor string, res corev1.ResourceName) resource.Quantity {
	var sum resource.Quantity
	if cq.Spec.CohortName == "" {
		return sum
	}
	for name, other := range q.cqs {
		if name == cq.Metadata.Name || other.Spec.CohortName != cq.Spec.CohortName {
			continue
		}
		nominal, limit := other.nominal(flavor, res)
		used, borrowed := other.reserved(flavor, res)
		free := nominal.DeepCopy()
		free.Sub(used)
		if limit != nil && free.Cmp(*limit) > 0 {
			free = limit.DeepCopy()
		}
		if free.Sign() > 0 {
			sum.Add(free)
		}
		sum.Sub(borrowed)
	}
	return sum
}
