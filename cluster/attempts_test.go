package cluster

import (
	"reflect"
	"strings"
	"testing"
	"time"

	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// failedPod is a failed pod of job sft whose container main ended with reason and code.
func failedPod(name, reason string, code int32, limit string) *corev1.Pod {
	p := fx.Pod("alice", name, "sft", "gpu-a100-0", corev1.PodFailed, 8, fx.At(time.Minute))
	delete(p.Spec.Containers[0].Resources.Limits, corev1.ResourceMemory)
	if limit != "" {
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = fx.Q(limit)
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, FinishedAt: *fx.At(2 * time.Minute)}}}}
	return p
}

// event is an event about an object of alice at T0 + at.
func event(kind, name, uid, reason, msg string, at time.Duration) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "alice", Name: name + "." + reason},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "alice", Name: name, UID: types.UID(uid)},
		Reason:         reason, Message: msg, LastTimestamp: *fx.At(at), FirstTimestamp: *fx.At(at)}
}

func TestPodAttemptWords(t *testing.T) {
	unreachable := fx.Node("gpu-a100-0", "training-pool", "a100", 8, false)
	unreachable.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
	h := &history{nodes: map[string]*corev1.Node{"gpu-a100-0": unreachable}}
	evicted := fx.Pod("alice", "sft-abcde", "sft", "gpu-a100-0", corev1.PodFailed, 8, fx.At(time.Minute))
	evicted.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
	kubelet := fx.Pod("alice", "sft-kblet", "sft", "gpu-a100-0", corev1.PodFailed, 8, fx.At(time.Minute))
	kubelet.Status.Reason, kubelet.Status.Message = "Evicted", "The node was low on resource: memory."
	tests := map[string]struct {
		pod     *corev1.Pod
		outcome string
		reason  string
		code    int32
	}{
		"exit code 1":      {failedPod("sft-aaaaa", "Error", 1, ""), AttemptFailed, "Error: exit code 1", 1},
		"OOMKilled":        {failedPod("sft-bbbbb", "OOMKilled", 137, "64Gi"), AttemptFailed, "OOMKilled (64Gi limit)", 137},
		"OOMKilled no cap": {failedPod("sft-ccccc", "OOMKilled", 137, ""), AttemptFailed, "OOMKilled", 137},
		"no reason":        {failedPod("sft-ddddd", "", 2, ""), AttemptFailed, "Error: exit code 2", 2},
		"taint manager":    {evicted, AttemptDisrupted, "Evicted: node gpu-a100-0 unreachable", -1},
		"kubelet eviction": {kubelet, AttemptDisrupted, "Evicted; The node was low on resource: memory.", -1},
		"running":          {runningPod("sft-eeeee", "sft", 0, ""), AttemptRunning, "", -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := h.podAttempt(tc.pod)
			if a.Outcome != tc.outcome || a.Reason != tc.reason || a.Node != tc.pod.Spec.NodeName || a.Gone {
				t.Errorf("attempt %+v, want outcome %s reason %q", a, tc.outcome, tc.reason)
			}
			if (a.ExitCode == nil) != (tc.code < 0) || a.ExitCode != nil && *a.ExitCode != tc.code {
				t.Errorf("exit code %v, want %d", a.ExitCode, tc.code)
			}
		})
	}
}

// TestGonePodsTellTheirStory: a Job's pod that the scheduler preempted and deleted is still an
// attempt, told from the events about it: its node, when, and the preemptor's job and class.
func TestGonePodsTellTheirStory(t *testing.T) {
	j := fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{Active: 1, StartTime: fx.At(0)})
	j.CreationTimestamp = *fx.At(0)
	j.Spec.BackoffLimit = new(int32(3))
	w := fromJob(j)
	preemptor := fx.Pod("default", "qwen2-sft-xyz12", "qwen2-sft", "gpu-a100-0", corev1.PodRunning, 8, fx.At(time.Minute))
	preemptor.UID, preemptor.Spec.PriorityClassName = "uid-high", "gpuctl-high"
	current := runningPod("sft-fghij", "sft", 3*time.Minute, "")
	h := &history{pods: []*corev1.Pod{preemptor, current}, events: []*corev1.Event{
		event("Job", "sft", "", "SuccessfulCreate", "Created pod: sft-abcde", 0),
		event("Pod", "sft-abcde", "uid-low", "Scheduled", "Successfully assigned alice/sft-abcde to gpu-a100-0", time.Second),
		event("Pod", "sft-abcde", "uid-low", "Preempted", "Preempted by pod uid-high on node gpu-a100-0", 2*time.Minute),
		event("Job", "sft", "", "SuccessfulCreate", "Created pod: sft-fghij", 2*time.Minute),
		event("Pod", "other-abcde", "", "Scheduled", "Successfully assigned alice/other-abcde to gpu-1", time.Second),
	}}
	atts := h.attempts(w, []*corev1.Pod{current})
	if len(atts) != 2 {
		t.Fatalf("attempts %+v, want the gone pod and the current one", atts)
	}
	gone := atts[0]
	start, end := fx.At(0).UTC(), fx.At(2*time.Minute).UTC()
	want := Attempt{Pod: "sft-abcde", Node: "gpu-a100-0", Start: &start, End: &end, Outcome: AttemptDisrupted,
		Reason: "Preempted by default/qwen2-sft (gpuctl-high)", Gone: true}
	if !reflect.DeepEqual(gone, want) {
		t.Errorf("gone attempt\n got %+v\nwant %+v", gone, want)
	}
	if atts[1].Pod != "sft-fghij" || atts[1].Outcome != AttemptRunning {
		t.Errorf("current attempt %+v", atts[1])
	}
	if got := jobReason(w.view(), atts); got != "Preempted by default/qwen2-sft (gpuctl-high), retried (attempt 2 of 4)" {
		t.Errorf("reason %q", got)
	}
	// The preemptor gone too: named from an event about it, its class from its Job.
	h.pods = []*corev1.Pod{current}
	h.events = append(h.events, event("Pod", "qwen2-sft-xyz12", "uid-high", "Scheduled", "Successfully assigned alice/qwen2-sft-xyz12 to gpu-a100-0", 2*time.Minute))
	h.priorities = map[string]string{"alice/qwen2-sft": "gpuctl-high"}
	if got := h.attempts(w, []*corev1.Pod{current})[0].Reason; got != "Preempted by alice/qwen2-sft (gpuctl-high)" {
		t.Errorf("preemptor from its events: %q", got)
	}
}

func TestJobReason(t *testing.T) {
	att := func(outcome, reason string) Attempt { return Attempt{Outcome: outcome, Reason: reason} }
	failed := att(AttemptFailed, "Error: exit code 1")
	preempted := att(AttemptDisrupted, "Preempted by default/qwen2-sft (gpuctl-high)")
	running := att(AttemptRunning, "")
	job := func(status string, failedPods int32, reason string) workloadView {
		return workloadView{Object: "Job", Status: status, Pods: 1, Failed: failedPods, FailedReason: reason, MaxAttempts: 4}
	}
	tests := map[string]struct {
		view     workloadView
		attempts []Attempt
		want     string
	}{
		"its own fault, once": {job(StatusFailed, 1, batchv1.JobReasonBackoffLimitExceeded), []Attempt{failed}, "Error: exit code 1"},
		"its own fault, thrice": {job(StatusFailed, 3, batchv1.JobReasonBackoffLimitExceeded),
			[]Attempt{failed, failed, failed}, "Error: exit code 1; BackoffLimitExceeded after 3 attempts"},
		"pods gone without a word": {job(StatusFailed, 3, batchv1.JobReasonBackoffLimitExceeded), nil, "BackoffLimitExceeded after 3 attempts"},
		"preempted, not retried":   {job(StatusFailed, 1, batchv1.JobReasonBackoffLimitExceeded), []Attempt{preempted}, "Preempted by default/qwen2-sft (gpuctl-high)"},
		"preempted, retried": {job(StatusRunning, 0, ""), []Attempt{preempted, running},
			"Preempted by default/qwen2-sft (gpuctl-high), retried (attempt 2 of 4)"},
		"retried past the limit (ignored disruptions)": {job(StatusRunning, 0, ""), []Attempt{preempted, preempted, preempted, preempted, running},
			"Preempted by default/qwen2-sft (gpuctl-high), retried (attempt 5)"},
		"pod failure policy": {job(StatusFailed, 1, batchv1.JobReasonPodFailurePolicy), []Attempt{failed}, "Error: exit code 1"},
		"policy, pod gone": {workloadView{Object: "Job", Status: StatusFailed, FailedReason: batchv1.JobReasonPodFailurePolicy,
			FailedMessage: "Container main for pod alice/sft-abcde failed with exit code 3 matching FailJob rule at index 1"}, nil,
			"Container main for pod alice/sft-abcde failed with exit code 3 matching FailJob rule at index 1"},
		"counted on the pod (events gone)": {job(StatusRunning, 1, ""), []Attempt{{Outcome: AttemptDisrupted, Reason: "Preempted"}, {Outcome: AttemptRunning, number: 3}},
			"Preempted, retried (attempt 3 of 4)"},
		"failed indexes":      {job(StatusFailed, 3, batchv1.JobReasonFailedIndexes), []Attempt{failed, failed, failed}, "Error: exit code 1; BackoffLimitExceeded after 3 attempts"},
		"nothing left":        {job(StatusFailed, 2, ""), nil, "2 failed attempts; no pod or event is left that says why"},
		"deadline":            {job(StatusFailed, 0, batchv1.JobReasonDeadlineExceeded), []Attempt{running}, "DeadlineExceeded: the job ran longer than its deadline"},
		"completed at last":   {job(StatusSucceeded, 0, ""), []Attempt{preempted, att(AttemptSucceeded, PodCompleted)}, "Completed on attempt 2 (after: Preempted by default/qwen2-sft (gpuctl-high))"},
		"completed":           {job(StatusSucceeded, 0, ""), []Attempt{att(AttemptSucceeded, PodCompleted)}, ""},
		"running":             {job(StatusRunning, 0, ""), []Attempt{running}, ""},
		"not a Job":           {workloadView{Object: "Deployment", Status: StatusRunning}, nil, ""},
		"multi-node, rank 1 ": {workloadView{Object: "Job", Status: StatusRunning, Pods: 2, MaxAttempts: 4}, ranked(preempted, running, running), "Preempted by default/qwen2-sft (gpuctl-high), retried (attempt 2 of 4)"},
		"kueue preempted": {workloadView{Object: "Job", Status: StatusPreempted, Queue: &QueueState{State: QueuePreempted, Position: 2,
			PreemptedBy: &Preemptor{JobID: "bob.big", Reason: "reclamation within the cohort"}}}, []Attempt{att(AttemptDisrupted, "Stopped by Kueue")},
			"Preempted by bob.big (reclamation within the cohort), requeued at #2"},
		"kueue evicted": {workloadView{Object: "Job", Status: StatusQueued, Queue: &QueueState{State: QueueEvicted, Reason: "PodsReadyTimeout", Position: 1}},
			nil, "Evicted by Kueue: PodsReadyTimeout, requeued at #1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := jobReason(tc.view, tc.attempts); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// ranked gives attempts ranks 1, 0, 1: rank 1 was tried twice.
func ranked(atts ...Attempt) []Attempt {
	for i, r := range []int{1, 0, 1} {
		atts[i].Rank = &r
	}
	return atts
}

func TestPodOfJob(t *testing.T) {
	tests := []struct {
		job, pod string
		index    int
		indexed  bool
		ok       bool
	}{
		{"sft", "sft-abcde", 0, false, true},
		{"sft", "sft-1-abcde", 1, true, true},
		{"sft", "sft-x-abcde", 0, false, false},
		{"sft", "sfx-abcde", 0, false, false},
		{"sft", "sft-abcdef", 0, false, false},
	}
	for _, tc := range tests {
		i, indexed, ok := podOfJob(tc.job, tc.pod)
		if i != tc.index || indexed != tc.indexed || ok != tc.ok {
			t.Errorf("podOfJob(%s, %s) = %d %v %v", tc.job, tc.pod, i, indexed, ok)
		}
	}
	if got := jobOfPod("qwen2-sft-3-abcde", nil); got != "qwen2-sft" {
		t.Errorf("jobOfPod: %s", got)
	}
}

func TestScopedHidesOtherTeamsPreemptors(t *testing.T) {
	s := Scope(nil, []string{"alice"})
	for in, want := range map[string]string{
		"Preempted by bob/big (gpuctl-high), retried (attempt 2 of 4)":     "Preempted by another team's job (gpuctl-high), retried (attempt 2 of 4)",
		"Preempted by alice/other (gpuctl-high), retried (attempt 2 of 4)": "Preempted by alice/other (gpuctl-high), retried (attempt 2 of 4)",
		"Error: exit code 1": "Error: exit code 1",
	} {
		if got := s.hideReason(in, nil, nil); got != want {
			t.Errorf("hideReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAttemptNumberFromThePod: a pod of a Job with backoffLimitPerIndex carries the failed and
// ignored attempts of its index before it, which count the attempts whose events are gone.
func TestAttemptNumberFromThePod(t *testing.T) {
	p := runningPod("sft-0-abcde", "sft", 0, "0")
	p.Annotations = map[string]string{batchv1.JobIndexFailureCountAnnotation: "1", batchv1.JobIndexIgnoredFailureCountAnnotation: "2"}
	a := (&history{}).podAttempt(p)
	if a.number != 4 || a.Rank == nil || *a.Rank != 0 {
		t.Errorf("attempt %+v, want number 4 at rank 0", a)
	}
	j := fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{Active: 1})
	j.Spec.BackoffLimitPerIndex = new(int32(5))
	if v := fromJob(j).view(); v.MaxAttempts != 6 {
		t.Errorf("MaxAttempts %d, want backoffLimitPerIndex + 1", v.MaxAttempts)
	}
}

func TestNeedsHistory(t *testing.T) {
	j := fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{Active: 1, StartTime: fx.At(0)})
	w := fromJob(j)
	early := runningPod("sft-0-abcde", "sft", time.Second, "0")
	late := runningPod("sft-0-fghij", "sft", time.Minute, "0")
	counted := runningPod("sft-0-klmno", "sft", time.Second, "0")
	counted.Annotations = map[string]string{batchv1.JobIndexIgnoredFailureCountAnnotation: "1"}
	failed := failedPod("sft-0-pqrst", "Error", 1, "")
	failed.CreationTimestamp = *fx.At(time.Second)
	for name, tc := range map[string]struct {
		pods []*corev1.Pod
		want bool
	}{
		"runs without a hitch":   {[]*corev1.Pod{early}, false},
		"a pod made later":       {[]*corev1.Pod{late}, true},
		"a disruption counted":   {[]*corev1.Pod{counted}, true},
		"a failed pod":           {[]*corev1.Pod{failed}, true},
		"more pods than it runs": {[]*corev1.Pod{early, runningPod("sft-0-uvwxy", "sft", time.Second, "0")}, true},
		"no pod left":            {nil, true},
	} {
		if got := needsHistory(w, tc.pods); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

// TestJobPodsReadsSharedHistoryOnce: `get jobs -A` over failed jobs in three namespaces lists
// each namespace's events, but the nodes, and gpuctl's pods of every namespace (a preempted
// pod's preemptor), once — not once per namespace.
func TestJobPodsReadsSharedHistoryOnce(t *testing.T) {
	var objs []runtime.Object
	for _, ns := range []string{"alice", "bob", "carol"} {
		objs = append(objs, fx.Job(ns, "sft", "training-pool", 8, batchv1.JobStatus{Failed: 1, StartTime: fx.At(0),
			Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}}),
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sft-x.preempted"}, Reason: "Preempted",
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "sft-x"}, Message: "Preempted by pod 1234 on node gpu-a100-0"})
	}
	client := fake.NewClientset(objs...)
	lists := map[string]int{}
	client.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" {
			lists[a.GetResource().Resource]++
		}
		return false, nil, nil
	})
	r := &Reader{Client: client}
	rows, err := r.JobPods(t.Context(), JobPodFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Items) != 3 {
		t.Fatalf("%d rows, want the 3 failed jobs: %+v", len(rows.Items), rows.Items)
	}
	// pods: the rows' own LIST, then one of gpuctl's pods everywhere for the preemptions.
	if lists["nodes"] != 1 || lists["pods"] != 2 {
		t.Errorf("cluster-wide LISTs %v, want nodes once and pods twice (the rows', the preemptors')", lists)
	}
}

// An event is any client's text: a team may write events about its own pods whose messages
// and names hold a terminal's escape sequences. Neither reaches a reason or a node unescaped.
func TestAttemptsEscapeEventText(t *testing.T) {
	j := fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{Active: 1, StartTime: fx.At(0)})
	j.CreationTimestamp = *fx.At(0)
	w := fromJob(j)
	const esc = "\x1b]0;pwned\x07\x1b[2J"
	h := &history{events: []*corev1.Event{
		event("Pod", "sft-abcde", "uid-1", "Scheduled", "Successfully assigned alice/sft-abcde to gpu-0"+esc, time.Second),
		event("Pod", "sft-abcde", "uid-1", "Evicted", "The node was low on memory."+esc, time.Minute),
		event("Pod", "sft-fghij", "uid-2", "Preempted", "Preempted by pod uid-evil on node "+esc, 2*time.Minute),
		event("Pod", "evil"+esc+"-abcde", "uid-evil", "Scheduled", "x", 2*time.Minute),
	}}
	atts := h.attempts(w, nil)
	if len(atts) != 2 {
		t.Fatalf("attempts %+v, want 2", atts)
	}
	for _, a := range atts {
		for _, s := range []string{a.Reason, a.Node, a.Pod} {
			if strings.ContainsAny(s, "\x1b\x07") {
				t.Errorf("attempt %q holds a control character: %q", a.Pod, s)
			}
		}
	}
	if got, want := atts[0].Reason, `Evicted: The node was low on memory.\x1b]0;pwned\x07\x1b[2J`; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	if atts[0].Node != "gpu-0" {
		t.Errorf("node %q, want gpu-0", atts[0].Node)
	}
}
