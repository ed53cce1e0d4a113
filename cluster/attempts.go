package cluster

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The outcomes of an attempt (Attempt.Outcome).
const (
	// AttemptPending has not started: its pod waits for a node or its containers.
	AttemptPending = "Pending"
	// AttemptRunning has not ended: its pod runs.
	AttemptRunning = "Running"
	// AttemptSucceeded ended with its containers exiting 0.
	AttemptSucceeded = "Succeeded"
	// AttemptFailed ended by its own fault: a container exited non-zero or ran out of memory.
	AttemptFailed = "Failed"
	// AttemptDisrupted was ended by the platform: preempted, evicted, its node lost, or
	// stopped by Kueue. Not the job's fault.
	AttemptDisrupted = "Disrupted"
	// AttemptUnknown ended, but neither its pod nor the events left say how.
	AttemptUnknown = "Unknown"
)

// Attempt is one pod that a training Job ran, whether it still exists or not: what a person
// needs to know of each try. A pod that no longer exists is told from the events about it,
// which outlive it.
type Attempt struct {
	// Pod is the pod's name; Rank its completion index (multi-node jobs), null otherwise.
	Pod  string `json:"pod"`
	Rank *int   `json:"rank,omitempty"`
	// Node is where it ran, "" when it was never scheduled.
	Node string `json:"node"`
	// Start is when it was scheduled or started; End when it ended (null while it runs,
	// or when nothing says).
	Start *time.Time `json:"start"`
	End   *time.Time `json:"end"`
	// Outcome is Pending, Running, Succeeded, Failed, Disrupted or Unknown.
	Outcome string `json:"outcome"`
	// Reason says why it ended, in words: "Preempted by default/sft (gpuctl-high)",
	// "Evicted: node gpu-a100-0 unreachable", "OOMKilled (64Gi limit)", "Error: exit code 1".
	Reason string `json:"reason,omitempty"`
	// ExitCode is the failed container's exit code, when known.
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Gone is true when the pod no longer exists and the events tell its story.
	Gone bool `json:"gone,omitempty"`

	// number is the attempt's number at its index as the Job controller counts it on the
	// pod (the failed and the ignored attempts before it, plus one; a Job with
	// backoffLimitPerIndex), 0 when the pod does not say.
	number int
}

// ended reports whether the attempt ended other than by success.
func (a Attempt) ended() bool {
	return a.Outcome != AttemptPending && a.Outcome != AttemptRunning && a.Outcome != AttemptSucceeded
}

// jobPodSuffix matches the end of the name of a pod that the Job controller made for job <prefix>:
// "<job>-<5 chars>", or "<job>-<index>-<5 chars>" for an indexed Job.
var jobPodSuffix = regexp.MustCompile(`^(?:(\d+)-)?[a-z0-9]{5}$`)

// podOfJob reports whether pod is named as the Job controller names the pods of job, and its
// index when the name has one.
func podOfJob(job, pod string) (index int, indexed, ok bool) {
	rest, found := strings.CutPrefix(pod, job+"-")
	if !found {
		return 0, false, false
	}
	m := jobPodSuffix.FindStringSubmatch(rest)
	if m == nil {
		return 0, false, false
	}
	if m[1] == "" {
		return 0, false, true
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil, true
}

// jobOfPod is the job a Job's pod belongs to, by the pod's labels (batch's job-name, else
// gpuctl's app) or else its name less the controller's suffix.
func jobOfPod(name string, podLabels map[string]string) string {
	if j := podLabels[batchv1.JobNameLabel]; j != "" {
		return j
	}
	if j := podLabels[keys.App]; j != "" {
		return j
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return name
	}
	job := name[:i]
	if j := strings.LastIndexByte(job, '-'); j > 0 {
		if _, err := strconv.Atoi(job[j+1:]); err == nil {
			job = job[:j]
		}
	}
	return job
}

// preemptedBy finds the preemptor's UID and the node in the scheduler's Preempted event:
// "Preempted by pod <uid> on node <node>", the node's name as a node may be named (an event
// is any client's text).
var preemptedBy = regexp.MustCompile(`^Preempted by (\S+) (\S+) on node ([a-z0-9][-a-z0-9.]*)`)

// scheduledTo finds the node in the scheduler's Scheduled event: "Successfully assigned
// <ns>/<pod> to <node>", the node's name as a node may be named.
var scheduledTo = regexp.MustCompile(`^Successfully assigned \S+ to ([a-z0-9][-a-z0-9.]*)`)

// PodRef names a pod that preempted another, as the read model found it.
type PodRef struct {
	Namespace string
	Name      string
	// Job is the job the pod belongs to; PriorityClass its PriorityClass.
	Job           string
	PriorityClass string
}

// history is what the reader knows around a Job's pods: the events of its namespace, the
// pods it can see (to name a preemptor), the nodes (to say what happened to a lost one), and
// the PriorityClasses of jobs by "<namespace>/<name>".
type history struct {
	events     []*corev1.Event
	pods       []*corev1.Pod
	nodes      map[string]*corev1.Node
	priorities map[string]string
}

// preemptor names the pod of uid: the pod itself when it is at hand, else what an event
// about it says.
func (h *history) preemptor(uid string) *PodRef {
	for _, p := range h.pods {
		if string(p.UID) == uid {
			ref := &PodRef{Namespace: p.Namespace, Name: p.Name, Job: jobOfPod(p.Name, p.Labels), PriorityClass: p.Spec.PriorityClassName}
			return ref
		}
	}
	for _, e := range h.events {
		o := e.InvolvedObject
		if string(o.UID) == uid && o.Kind == "Pod" {
			job := jobOfPod(o.Name, nil)
			return &PodRef{Namespace: o.Namespace, Name: o.Name, Job: job, PriorityClass: h.priorities[o.Namespace+"/"+job]}
		}
	}
	return nil
}

// nodeState says what is wrong with a node now: "unreachable", "not ready", "gone", or its
// NoExecute taint; "" when nothing is.
func (h *history) nodeState(name string) string {
	if name == "" || h.nodes == nil {
		return ""
	}
	n := h.nodes[name]
	if n == nil {
		return "gone"
	}
	for _, t := range n.Spec.Taints {
		switch t.Key {
		case corev1.TaintNodeUnreachable:
			return "unreachable"
		case corev1.TaintNodeNotReady:
			return "not ready"
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return "not ready"
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return "tainted " + t.Key
		}
	}
	return ""
}

// evictedWords is "Evicted: node X <state>" (unreachable, not ready, gone), or "Evicted: node
// X tainted NoExecute" when the node is well again (the node controller lifts its unreachable
// taint once the node is back, and nothing left says which taint it was).
func (h *history) evictedWords(node string) string {
	if node == "" {
		return "Evicted by the taint manager"
	}
	if s := h.nodeState(node); s != "" {
		return "Evicted: node " + node + " " + s
	}
	return "Evicted: node " + node + " tainted NoExecute"
}

// preemptedWords is "Preempted by <ns>/<job> (<class>)", or by what the event names.
func (h *history) preemptedWords(uid, node string) string {
	if ref := h.preemptor(uid); ref != nil {
		s := "Preempted by " + ref.Namespace + "/" + ref.Job
		if ref.PriorityClass != "" {
			s += " (" + ref.PriorityClass + ")"
		}
		return oneLine(s) // named by an event: any client's text
	}
	if node != "" {
		return "Preempted by a higher-priority pod on node " + node
	}
	return "Preempted by a higher-priority pod"
}

// attempts lists the pods a Job ran: those that exist (pods, of its namespace), and those
// the events of its pods and of the Job itself name, oldest first.
func (h *history) attempts(w workload, pods []*corev1.Pod) []Attempt {
	if w.object != "Job" {
		return nil
	}
	byPod := map[string]*Attempt{}
	var order []string
	add := func(a Attempt) *Attempt {
		if byPod[a.Pod] == nil {
			order = append(order, a.Pod)
			byPod[a.Pod] = &a
		}
		return byPod[a.Pod]
	}
	for _, p := range pods {
		if p.Namespace == w.meta.Namespace && w.selector.Matches(labels.Set(p.Labels)) {
			add(h.podAttempt(p))
		}
	}
	since := w.meta.CreationTimestamp.Time
	for _, e := range sortedEvents(h.events) {
		o := e.InvolvedObject
		if e.Namespace != w.meta.Namespace || eventTime(e).Before(since) {
			continue
		}
		name := ""
		switch {
		case o.Kind == "Job" && o.Name == w.meta.Name && e.Reason == "SuccessfulCreate":
			name = strings.TrimPrefix(e.Message, "Created pod: ")
		case o.Kind == "Pod":
			name = o.Name
		}
		idx, indexed, ok := podOfJob(w.meta.Name, name)
		if !ok {
			continue
		}
		a := byPod[name]
		if a == nil {
			a = add(Attempt{Pod: name, Outcome: AttemptUnknown, Gone: true})
			if indexed {
				a.Rank = &idx
			}
		}
		if a.Gone {
			h.tell(a, e)
		} else if e.Reason == "Preempted" && a.Outcome == AttemptDisrupted {
			if m := preemptedBy.FindStringSubmatch(e.Message); m != nil {
				a.Reason = h.preemptedWords(m[2], m[3])
			}
		}
	}
	out := make([]Attempt, 0, len(order))
	for _, name := range order {
		a := *byPod[name]
		if a.Gone && a.Outcome == AttemptUnknown && w.queue != nil {
			a.Outcome, a.Reason = AttemptDisrupted, "Stopped by Kueue"
		}
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(a, b Attempt) int { return timeOrZero(a.Start).Compare(timeOrZero(b.Start)) })
	return out
}

// tell adds what an event about a gone pod says to its attempt.
func (h *history) tell(a *Attempt, e *corev1.Event) {
	t := eventTime(e).UTC()
	if a.Start == nil {
		a.Start = &t
	}
	switch e.Reason {
	case "Scheduled":
		if m := scheduledTo.FindStringSubmatch(e.Message); m != nil {
			a.Node = m[1]
		}
		return
	case "Preempted":
		m := preemptedBy.FindStringSubmatch(e.Message)
		if m == nil {
			a.Outcome, a.Reason = AttemptDisrupted, "Preempted"
			break
		}
		if a.Node == "" {
			a.Node = m[3]
		}
		a.Outcome, a.Reason = AttemptDisrupted, h.preemptedWords(m[2], m[3])
	case "TaintManagerEviction":
		if strings.HasPrefix(e.Message, "Cancelling") {
			return
		}
		a.Outcome, a.Reason = AttemptDisrupted, h.evictedWords(a.Node)
	case "Evicted":
		a.Outcome, a.Reason = AttemptDisrupted, "Evicted: "+oneLine(e.Message)
	case "NodeNotReady":
		if a.Outcome == AttemptUnknown {
			a.Outcome, a.Reason = AttemptDisrupted, "Evicted: node "+cmp.Or(a.Node, "?")+" not ready"
		}
	case "Killing", "SuccessfulDelete", "Created", "Started", "Pulled", "Pulling":
	default:
		return
	}
	if e.Reason != "Created" && e.Reason != "Started" && e.Reason != "Pulled" && e.Reason != "Pulling" {
		a.End = &t
	}
}

// podAttempt is the attempt of a pod that exists.
func (h *history) podAttempt(p *corev1.Pod) Attempt {
	a := Attempt{Pod: p.Name, Node: p.Spec.NodeName, Outcome: AttemptRunning}
	if n, ok := rank(p); ok {
		a.Rank = &n
	}
	failed, err1 := strconv.Atoi(p.Annotations[batchv1.JobIndexFailureCountAnnotation])
	ignored, err2 := strconv.Atoi(p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation])
	if err1 == nil || err2 == nil {
		a.number = failed + ignored + 1
	}
	start := p.CreationTimestamp.UTC()
	if p.Status.StartTime != nil {
		start = p.Status.StartTime.UTC()
	}
	a.Start = &start
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			end := t.FinishedAt.UTC()
			if a.End == nil || end.After(*a.End) {
				a.End = &end
			}
		}
	}
	if c := podConditionOf(p, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
		a.Outcome = AttemptDisrupted
		a.Reason = h.disruption(p, c)
		return a
	}
	switch p.Status.Phase {
	case corev1.PodPending, "":
		a.Outcome = AttemptPending
	case corev1.PodSucceeded:
		a.Outcome, a.Reason = AttemptSucceeded, PodCompleted
	case corev1.PodFailed:
		a.Outcome = AttemptFailed
		if p.Status.Reason == "Evicted" {
			a.Outcome = AttemptDisrupted
		}
		a.Reason, a.ExitCode = failureWords(p)
	}
	return a
}

// disruption words a pod's DisruptionTarget condition.
func (h *history) disruption(p *corev1.Pod, c *corev1.PodCondition) string {
	switch c.Reason {
	case corev1.PodReasonPreemptionByScheduler:
		return h.preemptedWords("", p.Spec.NodeName) // the event names the preemptor (attempts)
	case "DeletionByTaintManager":
		return h.evictedWords(p.Spec.NodeName)
	case "DeletionByPodGC":
		return "Evicted: node " + cmp.Or(p.Spec.NodeName, "?") + " gone"
	case "EvictionByEvictionAPI":
		return "Evicted: node " + cmp.Or(p.Spec.NodeName, "?") + " drained"
	case "TerminationByKubelet":
		return "Evicted by the kubelet: " + oneLine(c.Message)
	}
	return "Disrupted: " + join(c.Reason, oneLine(c.Message))
}

// failureWords says why a failed pod failed: "OOMKilled (64Gi limit)", "Error: exit code 1",
// "Evicted: <the kubelet's message>", with the failed container's exit code.
func failureWords(p *corev1.Pod) (string, *int32) {
	if p.Status.Reason != "" {
		return join(p.Status.Reason, oneLine(p.Status.Message)), nil
	}
	for _, c := range p.Status.ContainerStatuses {
		t := c.State.Terminated
		if t == nil || t.ExitCode == 0 && t.Reason != "OOMKilled" {
			continue
		}
		code := t.ExitCode
		if t.Reason == "OOMKilled" {
			words := "OOMKilled"
			if lim := memoryLimit(p, c.Name); lim != "" {
				words += " (" + lim + " limit)"
			}
			return words, &code
		}
		return cmp.Or(t.Reason, "Error") + ": exit code " + strconv.Itoa(int(code)), &code
	}
	return string(corev1.PodFailed), nil
}

// memoryLimit is the named container's memory limit, "" without one.
func memoryLimit(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				return q.String()
			}
		}
	}
	return ""
}

// jobReason says in words why a job stands where it does: why it failed, why it was retried,
// where Kueue requeued it, or "" for a job that runs or ran without a hitch. attempts are the
// job's (oldest first).
//
//   - Kueue preempted or evicted it: "Preempted by bob.big (reclamation within the cohort),
//     requeued at #2"; never a failed attempt.
//   - Failed: the reason of the attempt that failed it ("Error: exit code 1", "OOMKilled (64Gi
//     limit)", "Preempted by default/sft (gpuctl-high)"), and "BackoffLimitExceeded after 3
//     attempts" when it was tried more than once; "failed on cluster gpu-b (MultiKueue), where
//     its pods and events are" when MultiKueue ran it and its Job says no more.
//   - Running or pending after an attempt ended: "Evicted: node gpu-a100-0 unreachable, retried
//     (attempt 2 of 4)".
//   - Succeeded after more than one attempt: "Completed on attempt 2 (after: ...)".
func jobReason(w workloadView, attempts []Attempt) string {
	if q := w.Queue; q != nil && (q.State == QueuePreempted || q.State == QueueEvicted) {
		s := "Preempted " + q.PreemptedBy.String()
		if q.State == QueueEvicted {
			s = "Evicted by Kueue: " + q.Reason
		}
		if q.Position > 0 {
			s += fmt.Sprintf(", requeued at #%d", q.Position)
		} else {
			s += ", requeued"
		}
		return s
	}
	if w.Object != "Job" {
		return ""
	}
	var last *Attempt
	for i := range attempts {
		if attempts[i].ended() {
			last = &attempts[i]
		}
	}
	lastWords := ""
	if last != nil {
		lastWords = last.Reason
	}
	n := attemptNumber(attempts, w.Pods)
	switch w.Status {
	case StatusFailed:
		tail := ""
		switch w.FailedReason {
		case "":
		case batchv1.JobReasonBackoffLimitExceeded, batchv1.JobReasonFailedIndexes:
			tries := max(n, int(w.Failed))
			if tries > 1 || lastWords == "" {
				tail = "BackoffLimitExceeded after " + humanize.Plural(max(tries, 1), "attempt")
			}
		case batchv1.JobReasonPodFailurePolicy:
			if lastWords == "" {
				tail = oneLine(w.FailedMessage)
			}
		case batchv1.JobReasonDeadlineExceeded:
			tail = "DeadlineExceeded: the job ran longer than its deadline"
		default:
			tail = join(w.FailedReason, oneLine(w.FailedMessage))
		}
		if lastWords == "" && tail == "" {
			if c := w.Queue.Worker(); c != "" {
				return "failed on cluster " + c + " (MultiKueue), where its pods and events are"
			}
			return humanize.Plural(max(w.Failed, 1), "failed attempt") + "; no pod or event is left that says why"
		}
		return join(lastWords, tail)
	case StatusSucceeded:
		if n > 1 && lastWords != "" {
			return fmt.Sprintf("Completed on attempt %d (after: %s)", n, lastWords)
		}
		return ""
	}
	if last == nil || lastWords == "" {
		return ""
	}
	of := ""
	if w.MaxAttempts > 0 && n <= w.MaxAttempts {
		of = fmt.Sprintf(" of %d", w.MaxAttempts)
	}
	return fmt.Sprintf("%s, retried (attempt %d%s)", lastWords, n, of)
}

// workloadView is what jobReason reads of a job.
type workloadView struct {
	// Object is Job, Deployment or StatefulSet; Status the job's status; Pods its parallelism.
	Object string
	Status string
	Pods   int32
	// Failed is the Job's count of failed pods; FailedReason and FailedMessage its Failed
	// (or FailureTarget) condition's.
	Failed        int32
	FailedReason  string
	FailedMessage string
	// MaxAttempts is backoffLimit + 1 (0 when not a Job).
	MaxAttempts int
	// Queue is the job's place in Kueue's queue.
	Queue *QueueState
}

// view is what jobReason reads of the workload.
func (w workload) view() workloadView {
	v := workloadView{Object: w.object, Status: w.status, Pods: w.pods, Queue: w.queue}
	if j := w.job; j != nil {
		v.Failed = j.Status.Failed
		v.MaxAttempts = 7 // the API's default backoffLimit of 6, and the first try
		switch {
		case j.Spec.BackoffLimitPerIndex != nil: // the counted failures of each index
			v.MaxAttempts = int(*j.Spec.BackoffLimitPerIndex) + 1
		case j.Spec.BackoffLimit != nil:
			v.MaxAttempts = int(*j.Spec.BackoffLimit) + 1
		}
		for _, c := range j.Status.Conditions {
			if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget) {
				v.FailedReason, v.FailedMessage = c.Reason, c.Message
			}
		}
	}
	return v
}

// attemptNumber is the number of the current (or last) attempt: the attempts of the rank
// tried most in a multi-node job, else all of them; at least what the Job controller counts
// on a pod (Attempt.number), which counts the pods whose events are gone too.
func attemptNumber(attempts []Attempt, pods int32) int {
	counted, byRank, most := 0, map[int]int{}, 0
	for _, a := range attempts {
		counted = max(counted, a.number)
		if a.Rank != nil {
			byRank[*a.Rank]++
			most = max(most, byRank[*a.Rank])
		}
	}
	switch {
	case most > 0:
	case pods > 1:
		most = max(1, len(attempts)-int(pods)+1)
	default:
		most = len(attempts)
	}
	return max(most, counted)
}

// sortedEvents are the events oldest first.
func sortedEvents(events []*corev1.Event) []*corev1.Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b *corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	return out
}

// eventTime is when an event last happened.
func eventTime(e *corev1.Event) time.Time {
	t := toEvent(e, "")
	return t.LastSeen
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// podConditionOf is the pod's condition of a type, or nil.
func podConditionOf(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
